import { s } from "./dom.js";

const START = "__start__";
const END = "__end__";

// drawGraph draws a graph as GET /assistants/{id}/graph gives it
// ({nodes: [{id}], edges: [{source, target, conditional, data}]}), in
// layers from START on the left to END on the right; edges back to an
// earlier layer run below, conditional edges are dashed. It returns the SVG element and
// highlight(names), which marks the nodes running now.
export function drawGraph(graph, title) {
  const ids = graph.nodes.map((n) => n.id);
  const edges = graph.edges;
  const rank = layers(ids, edges);
  const byRank = [];
  for (const id of ids) (byRank[rank.get(id)] ||= []).push(id);

  const W = (id) => (id === START || id === END ? 58 : Math.max(72, label(id).length * 8.5 + 26));
  const H = 32, gapX = 56, gapY = 22, pad = 20;
  const pos = new Map();
  // Layers run left to right; a layer's nodes stack centred on the middle line.
  const colW = byRank.map((row = []) => Math.max(...row.map(W)));
  const colH = byRank.map((row = []) => row.length * H + (row.length - 1) * gapY);
  const backEdges = edges.filter((e) => rank.get(e.target) <= rank.get(e.source)).length;
  const belowRoom = backEdges ? 24 + 12 * backEdges : 0;
  const inner = Math.max(...colH);
  const midY = pad + inner / 2;
  let x = pad;
  byRank.forEach((row = [], r) => {
    let y = midY - colH[r] / 2;
    for (const id of row) {
      pos.set(id, { x: x + (colW[r] - W(id)) / 2, y, w: W(id), h: H });
      y += H + gapY;
    }
    x += colW[r] + gapX;
  });
  const width = x - gapX + pad;
  const height = pad * 2 + inner + belowRoom;

  const titleID = `graph-title-${Math.random().toString(36).slice(2)}`;
  const descID = `${titleID}-desc`;
  const described = edges.map((e) => `${label(e.source)} to ${label(e.target)}${e.conditional ? " (conditional" + (e.data && e.data !== e.target ? `: ${e.data}` : "") + ")" : ""}`);
  const svg = s("svg", {
    viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-labelledby": `${titleID} ${descID}`, class: "graph-svg",
  });
  svg.append(
    s("title", { id: titleID }, title),
    s("desc", { id: descID }, `Nodes: ${ids.map(label).join(", ")}. Edges: ${described.join("; ")}.`),
    s("defs", null,
      s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))),
  );

  let back = 0;
  for (const e of edges) {
    const a = pos.get(e.source), b = pos.get(e.target);
    if (!a || !b) continue;
    let d, lx, ly;
    if (rank.get(e.target) > rank.get(e.source)) {
      const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2;
      const skip = rank.get(e.target) - rank.get(e.source) > 1;
      // An edge over a layer arcs above it.
      const lift = skip ? -(inner / 2 + 18) : 0;
      d = `M${x1},${y1} C${x1 + gapX},${y1 + lift} ${x2 - gapX},${y2 + lift} ${x2},${y2}`;
      lx = (x1 + x2) / 2;
      ly = (y1 + y2) / 2 + lift * 0.75 - 4;
    } else {
      // An edge back to an earlier layer runs below.
      back++;
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y + b.h;
      const low = Math.max(y1, y2) + 18 + 12 * back;
      d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
      lx = (x1 + x2) / 2;
      ly = low + 4;
    }
    const g = s("g", { class: `edge${e.conditional ? " conditional" : ""}`, "data-source": e.source, "data-target": e.target });
    g.append(s("path", { d, "marker-end": "url(#arrow)" }));
    if (e.conditional && e.data && e.data !== e.target) g.append(s("text", { x: lx, y: ly, class: "edge-label", "text-anchor": "middle" }, e.data));
    svg.append(g);
  }
  const boxes = new Map();
  for (const id of ids) {
    const p = pos.get(id);
    const terminal = id === START || id === END;
    const g = s("g", { class: `node${terminal ? " terminal" : ""}`, "data-node": id });
    g.append(
      s("rect", { x: p.x, y: p.y, width: p.w, height: p.h, rx: terminal ? p.h / 2 : 6 }),
      s("text", { x: p.x + p.w / 2, y: p.y + p.h / 2, "dominant-baseline": "central", "text-anchor": "middle" }, label(id)),
    );
    svg.append(g);
    boxes.set(id, g);
  }
  return {
    svg,
    highlight(names) {
      for (const [id, g] of boxes) g.classList.toggle("running", names.has(id));
    },
  };
}

function label(id) {
  return id === START ? "start" : id === END ? "end" : id;
}

// layers ranks nodes by their longest path from START over the edges that
// do not close a cycle; END goes below everything.
function layers(ids, edges) {
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of edges) if (out.has(e.source) && out.has(e.target)) out.get(e.source).push(e.target);
  const backEdge = new Set();
  const state = new Map();
  const visit = (n) => {
    state.set(n, 1);
    for (const m of out.get(n)) {
      if (state.get(m) === 1) backEdge.add(`${n}\u0000${m}`);
      else if (!state.has(m)) visit(m);
    }
    state.set(n, 2);
  };
  if (out.has(START)) visit(START);
  for (const id of ids) if (!state.has(id)) visit(id);

  const rank = new Map(ids.map((id) => [id, 0]));
  // Longest path by relaxation; the forward edges form a DAG, so |ids| rounds do.
  for (let i = 0; i < ids.length; i++) {
    let changed = false;
    for (const [n, targets] of out) {
      for (const m of targets) {
        if (backEdge.has(`${n}\u0000${m}`) || m === START) continue;
        if (rank.get(m) < rank.get(n) + 1) {
          rank.set(m, rank.get(n) + 1);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  if (rank.has(END)) {
    let max = 0;
    for (const [id, r] of rank) if (id !== END) max = Math.max(max, r);
    rank.set(END, max + 1);
  }
  // Close gaps a lone END may leave.
  const used = [...new Set(rank.values())].sort((a, b) => a - b);
  const dense = new Map(used.map((r, i) => [r, i]));
  for (const [id, r] of rank) rank.set(id, dense.get(r));
  return rank;
}
