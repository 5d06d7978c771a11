// Zoom and pan of the tree: the canvas is scaled and moved with one CSS transform inside a
// viewport that clips it. The wheel, a pinch and the buttons zoom (about the pointer, the
// fingers, or the centre), a drag pans, "fit" scales the whole tree into the viewport. While
// fitting is on, the view fits again as the tree grows or the window changes size; a manual
// zoom or pan turns it off until "fit" is pressed.

const MIN_SCALE = 0.05; // fitting may go this far down; a 500-node tree still fits
const MAX_SCALE = 3;
const STEP = 1.25; // one button press or key
const WHEEL = 0.0015; // scale factor per wheel pixel (exponential, so in and out are symmetric)
const MARGIN = 12; // free pixels around a fitted tree…
const TOP = 56; // …and above it, where the zoom buttons float
const DRAG = 4; // pixels a press must move before it pans instead of clicking

const clamp = (k, lo, hi) => Math.min(hi, Math.max(lo, k));

export class PanZoom {
  /**
   * @param {HTMLElement} viewport the clipping element that receives the gestures
   * @param {HTMLElement} content the element that is transformed (origin at its top left)
   * @param {(view: PanZoom) => void} onChange called after every change of the transform
   */
  constructor(viewport, content, onChange = () => {}) {
    this.viewport = viewport;
    this.content = content;
    this.onChange = onChange;
    this.k = 1;
    this.x = 0;
    this.y = 0;
    this.width = 0; // the content's own size, unscaled
    this.height = 0;
    this.fitting = true;
    this.pointers = new Map(); // pressed pointer id → its last position (two: a pinch)
    this.dragged = false; // the press moved the view: its click is not a click

    viewport.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    viewport.addEventListener("pointerdown", (e) => this.pointerDown(e));
    viewport.addEventListener("pointermove", (e) => this.pointerMove(e));
    viewport.addEventListener("pointerup", (e) => this.pointerUp(e));
    viewport.addEventListener("pointercancel", (e) => this.pointerUp(e));
    // A drag that started on a node must not also click it.
    viewport.addEventListener("click", (e) => this.swallowClick(e), { capture: true });
    viewport.addEventListener("keydown", (e) => this.key(e));
    new ResizeObserver(() => this.fitting && this.fit()).observe(viewport);
  }

  /** The content's unscaled size changed (the tree was redrawn). */
  setSize(width, height) {
    if (width === this.width && height === this.height) return;
    this.width = width;
    this.height = height;
    if (this.fitting) this.fit();
  }

  /** Scale the whole content into the viewport (never above 1:1), centred; fitting stays on. */
  fit() {
    this.fitting = true;
    const { clientWidth: vw, clientHeight: vh } = this.viewport;
    if (!this.width || !this.height || !vw || !vh) return this.apply();
    const k = clamp(
      Math.min((vw - 2 * MARGIN) / this.width, (vh - TOP - MARGIN) / this.height, 1),
      MIN_SCALE,
      MAX_SCALE,
    );
    this.k = k;
    this.x = (vw - this.width * k) / 2;
    this.y = TOP + (vh - TOP - MARGIN - this.height * k) / 2;
    this.apply(true);
  }

  /** Back to the initial state for a new tree: fitting on, nothing drawn yet. */
  reset() {
    this.width = this.height = 0;
    this.k = 1;
    this.x = this.y = 0;
    this.fit();
  }

  /** Zoom by `factor` keeping the viewport point (px, py) still (default: the centre). */
  zoomBy(
    factor,
    px = this.viewport.clientWidth / 2,
    py = this.viewport.clientHeight / 2,
    animate = true,
  ) {
    const k = clamp(this.k * factor, MIN_SCALE, MAX_SCALE);
    this.x = px - ((px - this.x) * k) / this.k;
    this.y = py - ((py - this.y) * k) / this.k;
    this.k = k;
    this.fitting = false;
    this.apply(animate);
  }

  /** 1:1, keeping the centre of the viewport on the same point of the content. */
  actualSize() {
    this.zoomBy(1 / this.k);
  }

  panBy(dx, dy) {
    this.x += dx;
    this.y += dy;
    this.fitting = false;
    this.apply();
  }

  /** Pan (at the current scale) so that the content box (x, y, w, h) is in view, if it is not. */
  reveal(x, y, w, h) {
    const { clientWidth: vw, clientHeight: vh } = this.viewport;
    const left = this.x + x * this.k;
    const top = this.y + y * this.k;
    const inside = left >= 0 && top >= 0 && left + w * this.k <= vw && top + h * this.k <= vh;
    if (inside) return;
    this.panBy(vw / 2 - (left + (w * this.k) / 2), vh / 2 - (top + (h * this.k) / 2));
  }

  /** Show the current transform; `animate` eases into it (fits and button zooms, not drags). */
  apply(animate = false) {
    this.content.classList.toggle("animate", animate);
    this.content.style.transform = `translate(${this.x}px, ${this.y}px) scale(${this.k})`;
    this.viewport.dataset.fitting = String(this.fitting);
    this.onChange(this);
  }

  wheel(event) {
    event.preventDefault(); // the page itself must not scroll
    const box = this.viewport.getBoundingClientRect();
    // Lines and pages (Firefox) are turned into pixels so every wheel zooms at a similar pace.
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? box.height : 1;
    const factor = Math.exp(-event.deltaY * unit * WHEEL);
    this.zoomBy(factor, event.clientX - box.left, event.clientY - box.top, false);
  }

  pointerDown(event) {
    if (event.button !== 0 || event.target.closest(".zoom-bar")) return;
    this.pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (this.pointers.size === 1) this.dragged = false;
    else this.grab(event.pointerId); // a second finger: a pinch, never a click
  }

  pointerMove(event) {
    const last = this.pointers.get(event.pointerId);
    if (!last) return;
    const now = { x: event.clientX, y: event.clientY };
    const other = [...this.pointers].find(([id]) => id !== event.pointerId)?.[1];
    if (other) {
      // Two pointers: zoom by how much their distance changed, about their midpoint, and
      // pan by how far the midpoint moved.
      const box = this.viewport.getBoundingClientRect();
      const before = { x: (last.x + other.x) / 2, y: (last.y + other.y) / 2 };
      const after = { x: (now.x + other.x) / 2, y: (now.y + other.y) / 2 };
      const spread = Math.hypot(last.x - other.x, last.y - other.y);
      const factor = spread > 0 ? Math.hypot(now.x - other.x, now.y - other.y) / spread : 1;
      this.zoomBy(factor, before.x - box.left, before.y - box.top, false);
      this.panBy(after.x - before.x, after.y - before.y);
    } else {
      if (!this.dragged && Math.hypot(now.x - last.x, now.y - last.y) < DRAG) return;
      this.grab(event.pointerId);
      this.panBy(now.x - last.x, now.y - last.y);
    }
    this.pointers.set(event.pointerId, now);
  }

  /** From now on the pointer moves the view: it is captured and its click will be swallowed. */
  grab(pointerId) {
    this.dragged = true;
    if (!this.viewport.hasPointerCapture(pointerId)) this.viewport.setPointerCapture(pointerId);
    this.viewport.classList.add("panning");
  }

  pointerUp(event) {
    if (!this.pointers.delete(event.pointerId)) return;
    if (this.pointers.size === 0) this.viewport.classList.remove("panning");
    if (this.viewport.hasPointerCapture(event.pointerId)) {
      this.viewport.releasePointerCapture(event.pointerId);
    }
  }

  swallowClick(event) {
    // detail 0: a click from the keyboard, never the end of a drag
    if (!this.dragged || event.detail === 0) return;
    this.dragged = false;
    event.stopPropagation();
    event.preventDefault();
  }

  key(event) {
    if (event.target.matches("input, textarea, select")) return;
    const actions = {
      "+": () => this.zoomBy(STEP),
      "=": () => this.zoomBy(STEP),
      "-": () => this.zoomBy(1 / STEP),
      0: () => this.actualSize(),
      f: () => this.fit(),
    };
    const action = actions[event.key];
    if (!action || event.ctrlKey || event.metaKey || event.altKey) return;
    event.preventDefault();
    action();
  }
}

export { STEP };
