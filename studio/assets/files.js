// The files pane: what the open thread's runs left in its sandbox, from
// GET /threads/{id}/files, each with a download link and images shown.

import { enc } from "./api.js";
import { h } from "./dom.js";

const imageTypes = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", svg: "image/svg+xml" };
// Images are fetched to be shown; past these they are only listed.
const maxImages = 12;
const maxImageBytes = 5 << 20;

export function contentPath(tid, path) {
  return `/threads/${enc(tid)}/files/content?path=${enc(path)}`;
}

function imageType(path) {
  const dot = path.lastIndexOf(".");
  return dot < 0 ? "" : imageTypes[path.slice(dot + 1).toLowerCase()] || "";
}

function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

// fetchBlob reads a file with the API's headers (the key, if any), which an
// <img src> or a plain link could not send.
async function fetchBlob(api, url, type) {
  const resp = await fetch(url, { headers: api.headers(false) });
  if (!resp.ok) throw await api.fail(resp);
  const bytes = await resp.arrayBuffer();
  return new Blob([bytes], { type });
}

function dataURL(blob) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(blob);
  });
}

export class FilesPane {
  // els: {pane, list, note, refresh}; report(err) shows an error.
  constructor(api, els, report) {
    this.api = api;
    this.els = els;
    this.report = report;
    this.enabled = false; // the server serves thread files
    this.tid = "";
    this.loading = null; // AbortController of the listing under way
    els.refresh.addEventListener("click", () => this.load(this.tid).catch(report));
  }

  enable(on) {
    this.enabled = on;
    this.els.pane.hidden = !on;
  }

  clear(note) {
    if (this.loading) this.loading.abort();
    this.tid = "";
    this.els.list.replaceChildren();
    this.els.note.textContent = note || "";
    this.els.refresh.disabled = true;
  }

  // load lists thread tid's files; a later call supersedes an earlier one.
  async load(tid) {
    if (!this.enabled) return;
    if (!tid) {
      this.clear("no thread yet");
      return;
    }
    if (this.loading) this.loading.abort();
    const controller = new AbortController();
    this.loading = controller;
    this.tid = tid;
    this.els.refresh.disabled = false;
    let entries;
    try {
      entries = (await this.api.get(`/threads/${enc(tid)}/files`, controller.signal)) || [];
    } catch (err) {
      if (err && err.name === "AbortError") return;
      throw err;
    }
    if (this.loading !== controller) return;
    const files = entries.filter((f) => !f.is_dir);
    const time = (f) => Date.parse(f.modified) || 0;
    files.sort((a, b) => time(b) - time(a) || a.path.localeCompare(b.path));
    this.els.note.textContent = files.length === 1 ? "1 file" : `${files.length} files`;
    if (files.length === 0) {
      this.els.list.replaceChildren(h("li", { class: "muted" }, "No files in this thread's sandbox yet."));
      return;
    }
    let images = 0;
    this.els.list.replaceChildren(
      ...files.map((f) => {
        const type = imageType(f.path);
        const show = type && f.size <= maxImageBytes && images++ < maxImages;
        return this.item(tid, f, type, show, controller.signal);
      }),
    );
  }

  item(tid, f, type, show, signal) {
    const url = contentPath(tid, f.path);
    const name = f.path.slice(f.path.lastIndexOf("/") + 1);
    const when = f.modified ? new Date(f.modified).toLocaleString() : "";
    const link = h(
      "a",
      {
        href: url,
        download: name,
        class: "download",
        onclick: (e) => {
          if (!this.api.key) return; // the plain link works without a key
          e.preventDefault();
          this.download(url, name, type).catch(this.report);
        },
      },
      "Download",
      h("span", { class: "visually-hidden" }, ` ${f.path}`),
    );
    const li = h(
      "li",
      { class: "file", "data-path": f.path },
      h("span", { class: "path", title: f.path }, f.path),
      h("span", { class: "meta muted" }, size(f.size), when ? `, ${when}` : ""),
      link,
    );
    if (show) {
      const img = h("img", { alt: `${f.path}, saved by a program in the thread's sandbox`, class: "preview" });
      li.append(img);
      fetchBlob(this.api, url, type)
        .then(dataURL)
        .then((src) => {
          if (!signal.aborted) img.src = src;
        })
        .catch(this.report);
    }
    return li;
  }

  async download(url, name, type) {
    const blob = await fetchBlob(this.api, url, type || "application/octet-stream");
    const href = URL.createObjectURL(blob);
    const a = h("a", { href, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 10000);
  }
}
