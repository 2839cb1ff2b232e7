package docblocks

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	md := "# t\n\n```sh\necho one\n```\n\n```text\nnot run\n```\n\n" +
		"<!-- doc-blocks: skip: talks to staging -->\n```sh\ncurl https://staging.example\n```\n\n" +
		"<!-- doc-blocks: needs docker -->\n```bash\ndocker info\n```\n\n````markdown\n```sh\ninside\n```\n````\n"
	bs, err := Extract("t.md", md)
	require.NoError(t, err)
	require.Len(t, bs, 3)
	assert.Equal(t, Block{File: "t.md", Line: 3, Text: "echo one\n"}, bs[0])
	assert.Equal(t, "talks to staging", bs[1].Skip)
	assert.True(t, bs[2].NeedsDocker)

	s := Script(bs, false)
	assert.Contains(t, s, "echo one\n")
	assert.NotContains(t, s, "staging")
	assert.NotContains(t, s, "docker info")
	assert.Contains(t, Script(bs, true), "docker info")

	for _, bad := range []struct{ md, err string }{
		{"<!-- doc-blocks: skip: -->\n```sh\nx\n```\n", `t.md:1: unknown doc-blocks marker "skip:": use "skip: REASON" or "needs docker"`},
		{"<!-- doc-blocks: skip: why -->\ntext\n```sh\nx\n```\n", "t.md:1: a doc-blocks marker must come just before a sh block"},
		{"<!-- doc-blocks: skip: why -->\n```yaml\nx: 1\n```\n", `t.md:1: a doc-blocks marker must come just before a sh block, not a "yaml" block`},
		{"```sh\nx\n", "t.md: a code fence is never closed"},
	} {
		_, err := Extract("t.md", bad.md)
		require.Error(t, err, bad.md)
		assert.Equal(t, bad.err, err.Error())
	}
}

// docFiles are the README and every page of docs/, README first, as a
// reader meets them.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	sort.Strings(pages)
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

func blocksOf(t *testing.T, root, path string) []Block {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rel, _ := filepath.Rel(root, path)
	bs, err := Extract(rel, string(b))
	require.NoError(t, err)
	return bs
}

// Every marker in the documentation is well formed, and the README runs
// its newcomer's path: install, demo, the three commands.
func TestDocumentationBlocksAreMarked(t *testing.T) {
	root := filepath.Join("..", "..")
	run, skipped := 0, 0
	for _, f := range docFiles(t, root) {
		for _, b := range blocksOf(t, root, f) {
			if b.Skip != "" {
				skipped++
				t.Logf("%s:%d not run: %s", b.File, b.Line, b.Skip)
				continue
			}
			run++
		}
	}
	t.Logf("%d blocks run by make doc-blocks, %d marked not to run", run, skipped)
	readme := Script(blocksOf(t, root, filepath.Join(root, "README.md")), false)
	// The first screen is enough: each command of the path is in the
	// README's first 60 lines.
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	first := strings.Join(lines[:min(60, len(lines))], "")
	for _, want := range []string{"make install", "idemcheck version", "make demo", "idemcheck-demo example-api --background", "idemcheck certify --url"} {
		assert.Contains(t, readme, want)
		assert.Contains(t, first, want, "in the README's first 60 lines")
	}
}

// TestDocBlocks runs every command block of the README and docs/ in a
// fresh clone of this commit, each file in one shell, in order, as a
// reader would: make doc-blocks (about 5 minutes). It installs idemcheck
// into a GOPATH of its own, never the user's, with GOBIN unset as on a
// fresh machine; the README's shell starts without that GOPATH's bin on
// PATH, so its install block must put it there.
func TestDocBlocks(t *testing.T) {
	if os.Getenv("IDEMCHECK_DOC_BLOCKS") != "1" {
		t.Skip("runs the documentation's commands for minutes: make doc-blocks (IDEMCHECK_DOC_BLOCKS=1)")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err, "a git checkout is needed, to clone it")
	dir := t.TempDir()
	clone := filepath.Join(dir, "clone")
	out, err := exec.Command("git", "clone", "--quiet", strings.TrimSpace(string(top)), clone).CombinedOutput()
	require.NoError(t, err, "%s", out)
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	gopath := filepath.Join(dir, "gopath")
	gobin := filepath.Join(gopath, "bin")
	docker := exec.Command("docker", "info").Run() == nil
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "PATH=") {
			base = append(base, kv)
		}
	}
	base = append(base, "GOPATH="+gopath, "GOMODCACHE="+strings.TrimSpace(string(modcache)), "DATABASE_URL=", "NO_COLOR=1")
	// IDEMCHECK_DOC_BLOCKS_ONLY=README.md,docs/ci.md runs those files
	// alone, for a change to them (make doc-blocks DOC_BLOCKS_ONLY=…).
	only := strings.Split(os.Getenv("IDEMCHECK_DOC_BLOCKS_ONLY"), ",")
	for _, f := range docFiles(t, clone) {
		rel, _ := filepath.Rel(clone, f)
		if only[0] != "" && !slices.Contains(only, rel) {
			continue
		}
		blocks := blocksOf(t, clone, f)
		ran := 0
		for _, b := range blocks {
			switch {
			case b.Skip != "":
				t.Logf("%s:%d not run: %s", rel, b.Line, b.Skip)
			case b.NeedsDocker && !docker:
				t.Logf("%s:%d not run: no Docker engine answers here", rel, b.Line)
			default:
				ran++
			}
		}
		if ran == 0 {
			continue
		}
		path := gobin + ":" + os.Getenv("PATH")
		if rel == "README.md" {
			path = os.Getenv("PATH")
		}
		ok := t.Run(rel, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", Script(blocks, docker))
			cmd.Dir, cmd.Env = clone, append(base, "PATH="+path)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			require.NoError(t, cmd.Run(), "%s: a block failed; its line is the last '=== doc-blocks:' above", rel)
			t.Logf("%s: %d blocks ran", rel, ran)
		})
		if !ok {
			return
		}
	}
}
