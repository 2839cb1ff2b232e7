package render

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	testify "github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/testctx"
)

// The HTML report is tested in a real browser: headless Chromium, the
// distribution's package (make chromium installs it), run as a program:
// --dump-dom gives the page as the browser built it, --screenshot what it
// drew, and --enable-logging=stderr every console message. A library that
// drives Chromium over its debugging protocol (chromedp) would give the same
// for a page without script, at the cost of a dependency.

// browserNames are the names the browser goes by on the PATH, in the order
// they are looked up: Debian's package, the name GitHub's Ubuntu runners
// give theirs, then Google Chrome, which those runners also carry. The
// Makefile's CHROMIUM_NAMES is the same list (TestBrowserNamesMatchMakefile):
// make chromium installs a browser only where none of them is found.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// browserEnv names the browser to use instead of looking one up, for this
// test and make chromium alike.
const browserEnv = "IDEMCHECK_CHROMIUM"

// findBrowser returns $IDEMCHECK_CHROMIUM, else the first of browserNames
// on the PATH, else "".
func findBrowser() string {
	if p := os.Getenv(browserEnv); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium finds the browser (findBrowser). Without one the test skips,
// and in CI (CI=true, or IDEMCHECK_REQUIRE_BROWSER=1 as make test sets
// there) fails: a skip there would only hide a broken setup.
func chromium(t *testing.T) string {
	t.Helper()
	if p := findBrowser(); p != "" {
		return p
	}
	msg := "the HTML report's browser test needs headless Chromium: make chromium installs it (apt-get install chromium)"
	if os.Getenv("CI") == "true" || os.Getenv("IDEMCHECK_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// headless opens file in headless Chromium with args (--dump-dom,
// --screenshot=…) and returns its standard output and the console messages
// the page caused. The browser gets a profile of its own, sends nothing
// anywhere (every request would go to a closed port on loopback), and runs
// until it is done: a loaded machine starts it slowly.
func headless(t *testing.T, file string, args ...string) (string, []string) {
	t.Helper()
	return headlessWith(t, chromium(t), file, args...)
}

// headlessWith is headless with the browser bin.
func headlessWith(t *testing.T, bin, file string, args ...string) (string, []string) {
	t.Helper()
	abs, err := filepath.Abs(file)
	require.NoError(t, err)
	base := []string{"--headless", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--disable-extensions", "--dns-prefetch-disable", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--hide-scrollbars"}
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses root (a CI container runs as root).
		base = append(base, "--no-sandbox")
	}
	ctx := testctx.UntilDeadline(t)
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+abs)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	require.NoError(t, cmd.Run(), "chromium: %s", errOut.String())
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatal("chromium did not finish before the test's deadline")
	}
	var console []string
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return out.String(), console
}

// browserPage writes the page of the recorded check-then-insert
// certification (a duplicate burst) to a file and returns its path.
func browserPage(t *testing.T, tamper func(string) string) string {
	t.Helper()
	h, rep := fixture(t, "check-then-insert.jsonl")
	page := htmlOf(t, NewHTMLPage(rep, h))
	if tamper != nil {
		page = tamper(page)
	}
	p := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(p, []byte(page), 0o644))
	return p
}

var attemptBars = regexp.MustCompile(`<g class="attempt[^"]*">`)

// The page of a failed certification loads in Chromium without a console
// message, and the browser's own DOM holds the verdict, the contract table
// and the anomaly's timeline with its witnesses.
func TestHTMLInChromium(t *testing.T) {
	p := browserPage(t, nil)
	dom, console := headless(t, p, "--dump-dom")
	testify.Empty(t, console, "console messages")
	for _, want := range []string{`id="verdict"`, "idemcheck: FAIL", `<table class="contract">`, "broken", `<svg class="timeline"`, "★"} {
		testify.True(t, strings.Contains(dom, want), "the page as Chromium built it lacks %q", want)
	}
	// Two anomalies for each of the two rounds' bursts of 16 attempts:
	// a drawing for each burst, which the second anomaly points at.
	testify.Equal(t, 2, strings.Count(dom, `<svg class="timeline"`))
	testify.Len(t, attemptBars.FindAllString(dom, -1), 2*16)
	testify.Equal(t, 2, strings.Count(dom, "Its attempts are drawn above"))

	// What it drew: the banner across the top is the failure's red.
	shot := filepath.Join(t.TempDir(), "shot.png")
	_, console = headless(t, p, "--screenshot="+shot, "--window-size=1100,900")
	testify.Empty(t, console, "console messages")
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	// Right of the heading, inside the banner.
	r, g, b := rgb(img, 1000, 50)
	testify.True(t, r > 180 && g < 80 && b < 80, "banner colour at (1000,50) is %d,%d,%d, want the failure's red", r, g, b)
}

// The browser test fails on what it is for: a page that makes the browser
// complain (here a script the page's own policy forbids) or lacks a
// timeline.
func TestHTMLInChromiumCanFail(t *testing.T) {
	p := browserPage(t, func(s string) string {
		s = strings.ReplaceAll(s, `<svg class="timeline"`, `<svg class="not-a-timeline"`)
		return strings.Replace(s, "</body>", "<script>document.title = 'x'</script></body>", 1)
	})
	dom, console := headless(t, p, "--dump-dom")
	testify.NotEmpty(t, console, "a script the policy forbids is reported on the console")
	testify.False(t, strings.Contains(dom, `<svg class="timeline"`))
	if len(console) > 0 {
		testify.Contains(t, console[0], "Content Security Policy")
	}
}

func rgb(img image.Image, x, y int) (int, int, int) {
	r, g, b, _ := img.At(x, y).RGBA()
	return int(r >> 8), int(g >> 8), int(b >> 8)
}

// The browser is looked up under each of its names, in browserNames'
// order, and $IDEMCHECK_CHROMIUM goes before them all. The programs here
// only carry the names: the lookup never runs them.
func TestBrowserLookupOrder(t *testing.T) {
	dir := t.TempDir()
	for _, name := range browserNames {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	t.Setenv("PATH", dir)
	t.Setenv(browserEnv, "")
	for _, name := range browserNames {
		testify.Equal(t, filepath.Join(dir, name), findBrowser(), "with %s and the names after it on the PATH", name)
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}
	testify.Empty(t, findBrowser(), "no browser on the PATH")
	t.Setenv(browserEnv, "/opt/browser/chrome")
	testify.Equal(t, "/opt/browser/chrome", findBrowser())
}

// make chromium looks for the same names, in the same order, as the test
// that uses what it installs: where only a name it accepts is present,
// the test finds it too.
func TestBrowserNamesMatchMakefile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^CHROMIUM_NAMES\s*:?=(.*)$`).FindSubmatch(b)
	require.NotNil(t, m, "the Makefile defines CHROMIUM_NAMES")
	testify.Equal(t, browserNames, strings.Fields(string(m[1])))
	testify.Contains(t, string(b), "$(CHROMIUM_NAMES)", "make chromium looks the names up")
}

// Where the browser goes by google-chrome or chromium-browser alone (as
// on GitHub's Ubuntu runners), the lookup takes that name and the page
// renders through it: a link by that name to this machine's browser is
// the only program on the PATH.
func TestBrowserUnderOtherNames(t *testing.T) {
	real, err := exec.LookPath(chromium(t))
	require.NoError(t, err)
	real, err = filepath.Abs(real)
	require.NoError(t, err)
	page := browserPage(t, nil)
	for _, name := range []string{"google-chrome", "chromium-browser"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			link := filepath.Join(dir, name)
			require.NoError(t, os.Symlink(real, link))
			path := os.Getenv("PATH")
			t.Setenv(browserEnv, "")
			t.Setenv("PATH", dir)
			bin := findBrowser()
			require.Equal(t, link, bin)
			// The browser itself runs with the machine's PATH: a
			// launcher script (Debian's, Google's) calls tools of its own.
			t.Setenv("PATH", path)
			dom, console := headlessWith(t, bin, page, "--dump-dom")
			testify.Empty(t, console, "console messages")
			for _, want := range []string{`id="verdict"`, "idemcheck: FAIL", `<svg class="timeline"`} {
				testify.True(t, strings.Contains(dom, want), "the page as %s built it lacks %q", name, want)
			}
		})
	}
}
