// Package action_test checks the GitHub Action (action.yml and its scripts
// in this folder) and the example workflow that uses it: the YAML is
// parsed and its references checked, and the scripts run here as the
// runner runs them, building idemcheck and certifying the example orders
// API started with --cmd on a real PostgreSQL.
package action_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const root = ".."

type step struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

type actionFile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

func decodeStrict(t *testing.T, path string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(v), "%s is not the YAML the runner expects", path)
	return b
}

var exprRE = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// The action's YAML holds only fields GitHub knows, every step that runs a
// command names its shell, every ${{ inputs.X }} is a declared input and
// every ${{ steps.X }} a step with that id, and the scripts exist and are
// executable.
func TestActionYAML(t *testing.T) {
	var a actionFile
	b := decodeStrict(t, filepath.Join(root, "action.yml"), &a)
	assert.NotEmpty(t, a.Name)
	assert.NotEmpty(t, a.Description)
	assert.Equal(t, "composite", a.Runs.Using)
	ids := map[string]bool{}
	for _, s := range a.Runs.Steps {
		if s.ID != "" {
			ids[s.ID] = true
		}
		if s.Run != "" {
			assert.Equal(t, "bash", s.Shell, "step %q", s.Name)
		}
		if s.Uses != "" {
			assert.Regexp(t, `^[\w.-]+/[\w.-]+@v\d+$|@[0-9a-f]{40}$`, s.Uses, "an action is pinned")
		}
	}
	for _, m := range exprRE.FindAllStringSubmatch(string(b), -1) {
		for _, ref := range regexp.MustCompile(`\b(inputs|steps)\.([\w-]+)`).FindAllStringSubmatch(m[1], -1) {
			switch ref[1] {
			case "inputs":
				assert.Contains(t, a.Inputs, ref[2], "%s names an input", m[0])
			case "steps":
				assert.True(t, ids[ref[2]], "%s names a step id", m[0])
			}
		}
	}
	assert.True(t, a.Inputs["args"].Required)
	for _, script := range []string{"install.sh", "run.sh"} {
		fi, err := os.Stat(script)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&0o111, "%s is executable", script)
		assert.Contains(t, string(b), `"$GITHUB_ACTION_PATH/action/`+script+`"`)
		out, err := exec.Command("bash", "-n", script).CombinedOutput()
		assert.NoError(t, err, "%s: %s", script, out)
	}
}

type workflow struct {
	Name        string         `yaml:"name"`
	On          map[string]any `yaml:"on"`
	Permissions map[string]string
	Jobs        map[string]struct {
		RunsOn   string `yaml:"runs-on"`
		Timeout  int    `yaml:"timeout-minutes"`
		Services map[string]struct {
			Image   string            `yaml:"image"`
			Env     map[string]string `yaml:"env"`
			Ports   []string          `yaml:"ports"`
			Options string            `yaml:"options"`
		} `yaml:"services"`
		Env   map[string]string `yaml:"env"`
		Steps []step            `yaml:"steps"`
	} `yaml:"jobs"`
}

// exampleArgs returns the args the example workflow gives the action.
func exampleArgs(t *testing.T) (string, workflow) {
	t.Helper()
	var w workflow
	decodeStrict(t, filepath.Join(root, "examples", "github-actions", "idemcheck.yml"), &w)
	job, ok := w.Jobs["certify"]
	require.True(t, ok)
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "idemcheck/idemcheck@") {
			return s.With["args"], w
		}
	}
	t.Fatal("the example workflow does not use the idemcheck action")
	return "", w
}

// The example workflow uses the action with --cmd, a database service and
// --policy, so that the fault checks run in CI; every action it uses is
// pinned to a version.
func TestExampleWorkflow(t *testing.T) {
	args, w := exampleArgs(t)
	job := w.Jobs["certify"]
	assert.Contains(t, job.Services, "postgres")
	assert.Contains(t, job.Env["DATABASE_URL"], "127.0.0.1:5432")
	for _, flag := range []string{"certify ", "--cmd ", "--policy ", "--effect-sql ", "--lease "} {
		assert.Contains(t, args, flag)
	}
	assert.NotContains(t, args, "--url", "--url alone skips the fault checks")
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "idemcheck/idemcheck@") {
			assert.NotEmpty(t, s.With["html"], "the HTML report is written")
			assert.NotEmpty(t, s.With["artifact-name"], "and uploaded as an artefact")
		}
	}
	for _, s := range job.Steps {
		if s.Uses != "" {
			assert.Regexp(t, `@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$`, s.Uses, "pinned")
		}
	}
}

// The project's own CI runs the tests, the documentation's blocks and the
// release snapshot (make release-check: goreleaser's, the image included),
// with every action pinned.
func TestProjectWorkflow(t *testing.T) {
	var w workflow
	decodeStrict(t, filepath.Join(root, ".github", "workflows", "ci.yml"), &w)
	var runs []string
	for name, job := range w.Jobs {
		assert.NotEmpty(t, job.RunsOn, name)
		for _, s := range job.Steps {
			if s.Uses != "" {
				assert.Regexp(t, `@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$`, s.Uses, "pinned")
			}
			runs = append(runs, s.Run+s.With["args"])
		}
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"make test", "make doc-blocks", "make release-check"} {
		assert.Contains(t, all, want)
	}
}

// actionEnv is what the runner gives the action's scripts.
func actionEnv(t *testing.T, dir string) []string {
	abs, err := filepath.Abs(root)
	require.NoError(t, err)
	for _, f := range []string{"path", "output", "summary"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	return append(os.Environ(),
		"GITHUB_ACTION_PATH="+abs, "RUNNER_TEMP="+filepath.Join(dir, "tmp"),
		"GITHUB_PATH="+filepath.Join(dir, "path"), "GITHUB_OUTPUT="+filepath.Join(dir, "output"),
		"GITHUB_STEP_SUMMARY="+filepath.Join(dir, "summary"), "NO_COLOR=1")
}

// The action's scripts, run as the runner runs them: install.sh builds
// idemcheck and adds it to the PATH, run.sh certifies the example orders
// API with the example workflow's own args (its API command and lease
// swapped for the example's: a 2 s lease keeps the test short), writes both
// reports and the job summary, and passes the exit code on.
func TestActionScriptsCertifyTheExampleAPI(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp"), 0o755))
	env := actionEnv(t, dir)

	install := exec.Command("./install.sh")
	install.Env = env
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "idemcheck ")
	path, err := os.ReadFile(filepath.Join(dir, "path"))
	require.NoError(t, err)
	bin := strings.TrimSpace(string(path))
	require.FileExists(t, filepath.Join(bin, "idemcheck"))

	orders := filepath.Join(dir, "orders")
	out, err = exec.Command("go", "build", "-o", orders, "../examples/orders/cmd/orders").CombinedOutput()
	require.NoError(t, err, "%s", out)

	args, _ := exampleArgs(t)
	args = strings.Replace(args, "--cmd ./bin/api", "--cmd '"+orders+" -lease 2s'", 1)
	args = strings.Replace(args, "--lease 30s --timeout 45s", "--lease 2s", 1)
	require.Contains(t, args, orders)

	run := exec.Command(filepath.Join(mustAbs(t, "."), "run.sh"))
	run.Dir = dir
	run.Env = append(env, "PATH="+bin+":"+os.Getenv("PATH"), "DATABASE_URL="+pgtest.DSN(t),
		"INPUT_ARGS="+args, "INPUT_JUNIT=reports/idemcheck.xml", "INPUT_JSON=reports/idemcheck.json", "INPUT_HTML=reports/idemcheck.html",
		"GITHUB_SERVER_URL=https://github.com", "GITHUB_REPOSITORY=acme/api", "GITHUB_RUN_ID=42")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "reports"), 0o755))
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)

	output, err := os.ReadFile(filepath.Join(dir, "output"))
	require.NoError(t, err)
	assert.Equal(t, "exit-code=0\n", string(output))
	junit, err := os.ReadFile(filepath.Join(dir, "reports", "idemcheck.xml"))
	require.NoError(t, err)
	assert.Contains(t, string(junit), `<testsuite name="POST /orders"`)
	assert.Contains(t, string(junit), `<testcase name="crash-lease" classname="POST /orders"`)
	var skipped []string
	for _, m := range regexp.MustCompile(`<testcase name="([^"]+)"[^>]*>\s*<skipped`).FindAllStringSubmatch(string(junit), -1) {
		skipped = append(skipped, m[1])
	}
	assert.ElementsMatch(t, []string{"cross-endpoint", "cross-tenant", "webhook-redelivery", "signature"}, skipped,
		"with --cmd and a database the fault checks run; only the checks that need a second endpoint, two clients, a webhook or signing skip")
	assert.FileExists(t, filepath.Join(dir, "reports", "idemcheck.json"))
	summary, err := os.ReadFile(filepath.Join(dir, "summary"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "idemcheck: PASS")
	assert.Contains(t, string(summary), "**Key numbers:**")
	assert.Contains(t, string(summary), "**HTML report:** `reports/idemcheck.html`")
	assert.Contains(t, string(summary), "(https://github.com/acme/api/actions/runs/42#artifacts)")
	page, err := os.ReadFile(filepath.Join(dir, "reports", "idemcheck.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "idemcheck: PASS")
	assert.Contains(t, string(page), `<table class="contract">`)
}

// A usage mistake in args is exit 2, from the script or from idemcheck,
// and the exit code is passed on.
func TestActionRunPassesTheExitCodeOn(t *testing.T) {
	dir := t.TempDir()
	env := actionEnv(t, dir)
	for _, args := range []string{"frobnicate --url x", "check"} {
		run := exec.Command(filepath.Join(mustAbs(t, "."), "run.sh"))
		run.Dir = dir
		run.Env = append(env, "INPUT_ARGS="+args, "PATH="+idemcheckDir(t)+":"+os.Getenv("PATH"))
		out, err := run.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		assert.Equal(t, 2, ee.ExitCode(), "%s", out)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

// idemcheckDir builds idemcheck once for the test into a folder of its own.
func idemcheckDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "idemcheck"), "../cmd/idemcheck").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// releaseTagFilter is the release workflow's tag filter as a regular
// expression: the tags whose push publishes a release. GitHub's filter
// patterns: [..] a class, + one or more of what precedes, * any run of
// characters but /, every other character itself.
func releaseTagFilter(t *testing.T) *regexp.Regexp {
	t.Helper()
	var w workflow
	decodeStrict(t, filepath.Join(root, ".github", "workflows", "release.yml"), &w)
	push, _ := w.On["push"].(map[string]any)
	tags, _ := push["tags"].([]any)
	require.NotEmpty(t, tags, "the release workflow runs on pushed tags")
	var alts []string
	for _, tag := range tags {
		var re strings.Builder
		for _, c := range tag.(string) {
			switch c {
			case '[', ']', '+', '-':
				re.WriteRune(c)
			case '*':
				re.WriteString(`[^/]*`)
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		alts = append(alts, re.String())
	}
	return regexp.MustCompile(`^(` + strings.Join(alts, "|") + `)$`)
}

// A version tag publishes a release: goreleaser, not a snapshot, with the
// right to create it and to push the image, logged in to the registry
// .goreleaser.yaml pushes the image to, every action pinned.
func TestReleaseWorkflow(t *testing.T) {
	filter := releaseTagFilter(t)
	assert.Regexp(t, filter, "v0.1.0")
	assert.Regexp(t, filter, "v12.3.45")
	for _, no := range []string{"v1", "v1.2", "latest", "main", "1.2.3", "v1.2.3-rc1"} {
		assert.NotRegexp(t, filter, no)
	}
	var w workflow
	decodeStrict(t, filepath.Join(root, ".github", "workflows", "release.yml"), &w)
	assert.Equal(t, "write", w.Permissions["contents"])
	assert.Equal(t, "write", w.Permissions["packages"], "the image is pushed to the GitHub Container Registry")
	var released bool
	loggedIn := map[string]bool{}
	for name, job := range w.Jobs {
		assert.NotEmpty(t, job.RunsOn, name)
		for _, s := range job.Steps {
			if s.Uses == "" {
				continue
			}
			assert.Regexp(t, `@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$`, s.Uses, "pinned")
			if strings.HasPrefix(s.Uses, "docker/login-action@") {
				assert.Contains(t, s.With["password"], "secrets.GITHUB_TOKEN")
				loggedIn[s.With["registry"]] = true
			}
			if strings.HasPrefix(s.Uses, "goreleaser/goreleaser-action@") {
				released = strings.HasPrefix(s.With["args"], "release ") && !strings.Contains(s.With["args"], "--snapshot")
				assert.Contains(t, s.Env["GITHUB_TOKEN"], "secrets.GITHUB_TOKEN")
				assert.NotEmpty(t, loggedIn, "the registry login comes before goreleaser pushes")
			}
		}
	}
	assert.True(t, released, "a step runs goreleaser release")

	// The images are idemcheck's own, in the registry logged in to.
	var gr struct {
		Release struct {
			GitHub struct{ Owner, Name string } `yaml:"github"`
		} `yaml:"release"`
		DockersV2 []struct {
			IDs        []string `yaml:"ids"`
			Dockerfile string   `yaml:"dockerfile"`
			Images     []string `yaml:"images"`
			ExtraFiles []string `yaml:"extra_files"`
		} `yaml:"dockers_v2"`
	}
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &gr))
	require.NotEmpty(t, gr.DockersV2, ".goreleaser.yaml publishes an image")
	for _, d := range gr.DockersV2 {
		assert.Equal(t, []string{"idemcheck"}, d.IDs, "the image holds idemcheck alone")
		assert.FileExists(t, filepath.Join(root, d.Dockerfile))
		for _, f := range d.ExtraFiles {
			assert.FileExists(t, filepath.Join(root, f), "an extra file of the image's build context")
		}
		for _, img := range d.Images {
			registry, repo, _ := strings.Cut(img, "/")
			assert.True(t, loggedIn[registry], "%s: the release workflow logs in to %s", img, registry)
			assert.Equal(t, gr.Release.GitHub.Owner+"/"+gr.Release.GitHub.Name, repo)
		}
	}
}

// git runs git in the repository and returns its output, or skips the
// test where the repository's history is not at hand.
func git(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the pin cannot be checked against the history")
	}
	out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// The example pins the action honestly: either to a full commit SHA of this
// repository whose action.yml declares every input the example gives it,
// or to a tag that exists and that the release workflow publishes. A tag
// no release made, a branch or a short SHA would not be what was reviewed.
// docs/ci.md shows the same pin.
func TestExamplePinIsACommitOrARelease(t *testing.T) {
	var w workflow
	decodeStrict(t, filepath.Join(root, "examples", "github-actions", "idemcheck.yml"), &w)
	var pin string
	var with map[string]string
	for _, s := range w.Jobs["certify"].Steps {
		if ref, ok := strings.CutPrefix(s.Uses, "idemcheck/idemcheck@"); ok {
			pin, with = ref, s.With
		}
	}
	require.NotEmpty(t, pin, "the example uses the idemcheck action")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ci.md"))
	require.NoError(t, err)
	assert.Contains(t, string(doc), "uses: idemcheck/idemcheck@"+pin+" ", "docs/ci.md shows the example's pin")

	if regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(pin) {
		if _, err := git(t, "cat-file", "-e", pin+"^{commit}"); err != nil {
			if shallow, _ := git(t, "rev-parse", "--is-shallow-repository"); shallow == "true" {
				t.Skipf("commit %s is not in this shallow clone: fetch the whole history to check the pin", pin)
			}
			t.Fatalf("the example pins idemcheck/idemcheck@%s, which is no commit of this repository", pin)
		}
		yml, err := git(t, "show", pin+":action.yml")
		require.NoError(t, err, "the pinned commit %s has an action.yml", pin)
		var a actionFile
		require.NoError(t, yaml.Unmarshal([]byte(yml), &a))
		for input := range with {
			assert.Contains(t, a.Inputs, input, "the action at %s has the input %q the example gives it", pin, input)
		}
		return
	}
	assert.Regexp(t, releaseTagFilter(t), pin, "the example pins idemcheck/idemcheck@%s: pin a full commit SHA or a release tag (vX.Y.Z)", pin)
	tag, err := git(t, "tag", "--list", pin)
	require.NoError(t, err)
	assert.Equal(t, pin, tag, "the example pins idemcheck/idemcheck@%s, a tag that does not exist: pin a full commit SHA until that release is tagged", pin)
}
