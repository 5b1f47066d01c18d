package studio_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentgraph/agentgraph/server"
)

var screenshotOut = flag.String("screenshot", "", "also write the page's screenshot after the fork to this PNG file (the how-to's picture)")

// chromium finds Debian's chromium (or another Chrome). Without one the
// browser tests skip, unless CI is set: then they fail.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: the studio's browser tests need it (apt-get install chromium)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser drives one headless Chromium tab and records what the page
// writes to its console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	n     int

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromium(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // the tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1440, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("STUDIO_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	}
	messages := chromedp.Console(ctx) // starts the browser
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		wg.Wait()
	})
	return b
}

// do runs steps, failing the test (with a screenshot) on an error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

// wait polls a JavaScript expression until it is truthy.
func (b *browser) wait(what, expr string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	path := b.shot("failure")
	state, _ := eval[string](b, `document.getElementById("status").textContent + " | " + document.getElementById("alert").textContent`)
	b.t.Fatalf("%s: %v\npage status: %s\nscreenshot: %s\nconsole: %v", what, err, state, path, b.messages())
}

func eval[T any](b *browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// must evaluates expr, failing the test on an error.
func must[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := eval[T](b, expr)
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

// shot saves the viewport as a PNG in the test's temporary directory.
func (b *browser) shot(name string) string {
	b.n++
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
	return path
}

func (b *browser) messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		out = append(out, m.String())
	}
	return out
}

// problems lists the console errors and uncaught exceptions so far, but
// for the browser's own network log when allowNetwork is set.
func (b *browser) problems(allowNetwork bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.console {
		if allowNetwork && m.Source == "network" {
			continue
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
		}
	}
	return out
}

// send types text into the message box and presses Enter, as a person does.
func (b *browser) send(text string) {
	b.t.Helper()
	b.do("send "+text,
		chromedp.Focus(chromedp.ID("chat-input")),
		chromedp.SendKeys(chromedp.ID("chat-input"), text),
		chromedp.KeyEvent(kb.Enter),
	)
}

// lastAnswer is the text of the last finished AI message.
const lastAnswer = `(() => { const m = [...document.querySelectorAll("#messages .msg.ai:not(.partial) .content")]; return m.length ? m[m.length - 1].textContent : "" })()`

// idle is true once no run streams and the status line says how the last one ended.
const idle = `!document.body.classList.contains("busy") && /finished|interrupted|error|cancel/.test(document.getElementById("status").textContent)`

func (b *browser) answer(what, pattern string, timeout time.Duration) string {
	b.t.Helper()
	b.wait(what, fmt.Sprintf(`%s && new RegExp(%q).test(%s)`, idle, pattern, lastAnswer), timeout)
	return must[string](b, lastAnswer)
}

// choose picks an assistant in the select, as a keyboard or a click would.
func (b *browser) choose(assistantID string) {
	b.t.Helper()
	must[bool](b, fmt.Sprintf(`(() => { const s = document.getElementById("assistant"); s.value = %q; s.dispatchEvent(new Event("change")); return true })()`, assistantID))
}

func TestBrowser(t *testing.T) {
	b := newBrowser(t) // before the server: chromium is looked for first
	ts := newStudio(t)
	start := time.Now()

	b.do("load the page", chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	if n := must[int](b, `document.querySelectorAll("#assistant option").length`); n != 2 {
		t.Fatalf("%d assistants listed; want codeact and approval", n)
	}
	nodes := must[[]string](b, `[...document.querySelectorAll("#graph g.node")].map(g => g.dataset.node)`)
	if strings.Join(nodes, " ") != "__start__ agent tools __end__" {
		t.Errorf("graph nodes %v; want start, agent, tools, end", nodes)
	}
	if n := must[int](b, `document.querySelectorAll("#graph g.edge.conditional").length`); n != 2 {
		t.Errorf("%d conditional edges drawn; want agent->tools and agent->end", n)
	}
	// Every control has a name a screen reader can say.
	unnamed := must[[]string](b, `[...document.querySelectorAll("input, select, textarea, button")]
		.filter(el => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.textContent.trim())
		.map(el => el.id || el.outerHTML.slice(0, 80))`)
	if len(unnamed) > 0 {
		t.Errorf("controls without a label: %v", unnamed)
	}
	// Record every node the graph marks as running.
	must[bool](b, `window.seenRunning = new Set();
		new MutationObserver(() => document.querySelectorAll("#graph g.node.running").forEach(g => seenRunning.add(g.dataset.node)))
			.observe(document.getElementById("graph"), {subtree: true, childList: true, attributes: true, attributeFilter: ["class"]});
		true`)

	// The guide's first scenario: the tool runs Python in the thread's sandbox.
	b.send("import platform, os; print(platform.python_version(), os.getcwd())")
	got := b.answer("scenario 1", `^Tool said:\n\[sb_[a-z0-9]+\] exit code 0\n3\.\d+\.\d+ /home/user$`, 20*time.Second)
	t.Logf("scenario 1 answered %q", got)
	if code := must[string](b, `document.querySelector("#messages pre.code.python").textContent`); !strings.Contains(code, "platform.python_version()") {
		t.Errorf("run_python's code shown as %q", code)
	}
	if badge := must[string](b, `document.querySelector("#messages .python-result .badge").textContent`); badge != "exit code 0" {
		t.Errorf("run_python's result badge %q; want exit code 0", badge)
	}
	if seen := must[[]string](b, `[...seenRunning].sort()`); strings.Join(seen, " ") != "agent tools" {
		t.Errorf("nodes highlighted while running: %v; want agent and tools", seen)
	}
	threadID := must[string](b, `location.hash.replace("#thread=", "")`)

	// The second: the same thread, so the same sandbox and its files.
	b.send("count the primes below 1,000,000")
	b.answer("scenario 2, primes", `primes below 1,000,000: 78498\nlargest gap: 114 after 492113$`, 30*time.Second)
	b.send("import json; print(len(json.load(open('primes.json'))), 'primes still on disk')")
	b.answer("scenario 2, file", `exit code 0\n78498 primes still on disk$`, 20*time.Second)
	if n := must[int](b, `document.querySelectorAll("#messages .msg").length`); n != 12 {
		t.Errorf("%d messages shown; want 12 (three turns of four)", n)
	}
	b.wait("the files pane", `!document.getElementById("files-pane").hidden && document.querySelector('#files li.file[data-path="primes.json"]') !== null`, 10*time.Second)
	b.shot("chat")

	// Thread search.
	b.do("search threads", chromedp.SendKeys(chromedp.ID("thread-search"), threadID[:8]))
	if ids := must[[]string](b, `[...document.querySelectorAll("#thread-list button.thread")].map(b => b.dataset.thread)`); len(ids) != 1 || ids[0] != threadID {
		t.Errorf("search for %s found %v", threadID[:8], ids)
	}
	b.do("search for nothing", chromedp.SendKeys(chromedp.ID("thread-search"), "no-such-thread"))
	b.wait("no match", `document.getElementById("thread-list").textContent.includes("No thread matches.")`, 5*time.Second)
	must[bool](b, `(() => { const q = document.getElementById("thread-search"); q.value = ""; q.dispatchEvent(new Event("input")); return true })()`)

	// The timeline: four checkpoints a turn, newest first, each with its writes.
	b.do("open the timeline", chromedp.Click(chromedp.ID("timeline-toggle")))
	b.wait("checkpoints", `document.querySelectorAll("#timeline li.checkpoint").length === 12`, 10*time.Second)
	b.do("open the newest checkpoint", chromedp.Click(chromedp.CSS("#timeline li.checkpoint:first-child summary")))
	writes := must[string](b, `document.querySelector("#timeline li.checkpoint:first-child details .tree").textContent`)
	if !strings.Contains(writes, "78498 primes still on disk") {
		t.Errorf("the newest checkpoint's writes read %q", writes)
	}
	if got := must[string](b, `document.getElementById("timeline-toggle").getAttribute("aria-expanded")`); got != "true" {
		t.Errorf("timeline toggle aria-expanded=%s", got)
	}

	// Fork: edit the second turn's question at its input checkpoint, then run from there.
	inputs := `[...document.querySelectorAll("#timeline li.checkpoint[data-next=agent]")].filter(li => li.querySelector("summary").textContent.includes(" input"))`
	if n := must[int](b, inputs+`.length`); n != 3 {
		t.Fatalf("%d input checkpoints; want one per turn", n)
	}
	must[bool](b, inputs+`[1].querySelector("summary").click(); true`)
	must[bool](b, inputs+`[1].querySelector("button.fork").click(); true`)
	b.wait("fork dialog", `document.getElementById("fork-dialog").open`, 5*time.Second)
	must[bool](b, `(() => {
		const ta = document.getElementById("fork-values");
		const v = JSON.parse(ta.value);
		const last = v.messages[v.messages.length - 1];
		if (!last.content.startsWith("count the primes")) throw new Error("forking at " + last.content);
		last.content = "print(6*7)";
		ta.value = JSON.stringify(v, null, 2);
		return true;
	})()`)
	b.do("fork and run", chromedp.Click(chromedp.CSS(`#fork-form button[value="run"]`)))
	b.answer("the forked run", `exit code 0\n42$`, 20*time.Second)
	if text := must[string](b, `document.getElementById("messages").textContent`); strings.Contains(text, "78498") || !strings.Contains(text, "/home/user") {
		t.Errorf("after the fork the chat should hold turn 1 and the forked turn only:\n%s", text)
	}
	b.wait("fork in the timeline", `document.querySelectorAll("#timeline li.checkpoint").length === 16 && document.getElementById("timeline").textContent.includes("forked from step")`, 10*time.Second)
	b.do("open the fork's newest checkpoint", chromedp.Click(chromedp.CSS("#timeline li.checkpoint:first-child summary")))
	forkShot := b.shot("fork")

	// An interrupt, answered from its form.
	b.do("new thread", chromedp.Click(chromedp.ID("new-thread")))
	approvalID := must[string](b, `[...document.querySelectorAll("#assistant option")].find(o => o.textContent === "approval").value`)
	b.choose(approvalID)
	b.wait("approval graph", `document.querySelector('#graph g.node[data-node="review"]') !== null`, 5*time.Second)
	b.send("Draft the release note")
	b.wait("interrupt form", `!document.getElementById("interrupt").hidden && document.getElementById("interrupt").textContent.includes("Send this draft?")`, 15*time.Second)
	b.wait("run ends interrupted", idle, 10*time.Second)
	b.shot("interrupt")
	b.do("answer yes", chromedp.SendKeys(chromedp.ID("resume-value"), "yes"), chromedp.Click(chromedp.CSS("#interrupt button")))
	b.answer("resumed run", `^Sent\.$`, 15*time.Second)
	if text := must[string](b, `document.getElementById("messages").textContent`); !strings.Contains(text, "Reviewer said: yes") {
		t.Errorf("after resuming, the chat reads:\n%s", text)
	}
	if !must[bool](b, `document.getElementById("interrupt").hidden`) {
		t.Error("the interrupt form is still shown after the run resumed")
	}

	// Cancel a run that would take 30 s.
	b.do("new thread", chromedp.Click(chromedp.ID("new-thread")))
	codeactID := must[string](b, `[...document.querySelectorAll("#assistant option")].find(o => o.textContent === "codeact").value`)
	b.choose(codeactID)
	b.wait("codeact graph", `document.querySelector('#graph g.node[data-node="tools"]') !== null`, 5*time.Second)
	b.send("import time; time.sleep(30)")
	b.wait("tools running", `document.querySelector('#graph g.node.running[data-node="tools"]') !== null && !document.getElementById("cancel").disabled`, 15*time.Second)
	cancelled := time.Now()
	b.do("cancel", chromedp.Click(chromedp.ID("cancel")))
	b.wait("run cancelled", `!document.body.classList.contains("busy") && document.getElementById("status").textContent.includes("interrupted")`, 15*time.Second)
	if d := time.Since(cancelled); d > 10*time.Second {
		t.Errorf("the run took %s to stop after Cancel", d)
	}

	b.do("new thread", chromedp.Click(chromedp.ID("new-thread")))
	savedPNG(t, b, ts.URL)

	if p := b.problems(false); len(p) > 0 {
		t.Errorf("the page wrote errors to the console:\n%s", strings.Join(p, "\n"))
	}
	if *screenshotOut != "" && forkShot != "" {
		png, err := os.ReadFile(forkShot)
		if err == nil {
			err = os.WriteFile(*screenshotOut, png, 0o644)
		}
		if err != nil {
			t.Error(errors.Join(errors.New("write -screenshot"), err))
		}
	}
	t.Logf("browser session took %s; screenshots in %s", time.Since(start).Round(time.Millisecond), b.shots)
}

// With an API key the page asks for it, keeps it for the tab, and sends it.
func TestBrowserAPIKey(t *testing.T) {
	b := newBrowser(t)
	ts := newStudio(t, server.WithAPIKey("sesame"))
	b.do("load the page", chromedp.Navigate(ts.URL), chromedp.WaitVisible(chromedp.ID("key-form")))
	if got := must[string](b, `document.activeElement.id`); got != "api-key" {
		t.Errorf("focus on %q; want the key field", got)
	}
	if alert := must[string](b, `document.getElementById("alert").textContent`); !strings.Contains(alert, "401") {
		t.Errorf("alert %q; want the server's 401", alert)
	}
	b.do("give the key", chromedp.SendKeys(chromedp.ID("api-key"), "sesame"), chromedp.KeyEvent(kb.Enter))
	b.wait("assistants listed", `document.body.dataset.ready === "true" && document.querySelectorAll("#assistant option").length === 2 && document.getElementById("key-form").hidden`, 10*time.Second)
	b.send("print(6*7)")
	b.answer("a run with the key", `exit code 0\n42$`, 20*time.Second)
	b.wait("the thread's files, listed with the key", `document.querySelector('#files li.file[data-path="main.py"]') !== null`, 10*time.Second)
	// An <img src> cannot carry the key: the page fetches the image with it.
	b.send(pngProgram)
	b.answer("the PNG program with the key", `exit code 0\nsaved$`, 20*time.Second)
	b.wait("the PNG shown with the key", `(() => { const img = document.querySelector('#files li.file[data-path="plots/red.png"] img.preview'); return img !== null && img.complete && img.naturalWidth === 24 })()`, 10*time.Second)
	// Only the first, keyless requests failed, and the browser logged them.
	if p := b.problems(true); len(p) > 0 {
		t.Errorf("the page wrote errors to the console:\n%s", strings.Join(p, "\n"))
	}
}

// A program that writes a PNG with the standard library alone: 24x16,
// red with a blue first row.
const pngProgram = `import os, struct, zlib; os.makedirs('plots', exist_ok=True); w, h = 24, 16; ` +
	`raw = b''.join(b'\x00' + (b'\x00\x00\xff' if y == 0 else b'\xff\x00\x00') * w for y in range(h)); ` +
	`chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d)); ` +
	`open('plots/red.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')); print('saved')`

// savedPNG runs pngProgram on a new codeact thread and checks the files
// pane: the PNG listed, shown inline, and downloadable with its bytes.
func savedPNG(t *testing.T, b *browser, base string) {
	t.Helper()
	b.send(pngProgram)
	b.answer("the PNG program", `exit code 0\nsaved$`, 20*time.Second)
	item := `document.querySelector('#files li.file[data-path="plots/red.png"]')`
	b.wait("the PNG listed and shown", item+` !== null && `+item+`.querySelector("img.preview").complete && `+item+`.querySelector("img.preview").naturalWidth === 24`, 10*time.Second)
	if hgt := must[int](b, item+`.querySelector("img.preview").naturalHeight`); hgt != 16 {
		t.Errorf("the inline image is %d pixels high, want 16", hgt)
	}
	if alt := must[string](b, item+`.querySelector("img.preview").alt`); !strings.Contains(alt, "plots/red.png") {
		t.Errorf("the image's alt text %q does not name the file", alt)
	}
	if !must[bool](b, `[...document.querySelectorAll("#files li.file")].some(li => li.dataset.path === "main.py" && !li.querySelector("img"))`) {
		t.Error("main.py is not listed, or is shown as an image")
	}
	b.shot("files")
	href := must[string](b, item+`.querySelector("a.download").getAttribute("href")`)
	name := must[string](b, item+`.querySelector("a.download").getAttribute("download")`)
	if name != "red.png" {
		t.Errorf("download name %q, want red.png", name)
	}
	resp, err := http.Get(base + href)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET %s: %d %s", href, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the download is not a PNG: %v", err)
	}
	red, blue := color.RGBAModel.Convert(img.At(5, 5)).(color.RGBA), color.RGBAModel.Convert(img.At(5, 0)).(color.RGBA)
	if img.Bounds().Dx() != 24 || img.Bounds().Dy() != 16 || red != (color.RGBA{255, 0, 0, 255}) || blue != (color.RGBA{0, 0, 255, 255}) {
		t.Errorf("the download is %v with %v at (5,5) and %v at (5,0); want 24x16, red with a blue first row", img.Bounds(), red, blue)
	}
	// The page fetched the same bytes it lists.
	listed := must[string](b, item+`.querySelector(".meta").textContent`)
	if !strings.HasPrefix(listed, fmt.Sprintf("%d B", len(data))) {
		t.Errorf("the pane lists %q; the download has %d bytes", listed, len(data))
	}
}
