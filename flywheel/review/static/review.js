// Keyboard-driven review: a accept, r reject (reason), l relabel (1/2/3), f flag verifier (reason), j/k next/prev,
// v the screenshots full size (click or 1 actual size, +/- zoom, 0 fit, arrows previous/next, Esc close).
(function () {
  const item = document.getElementById("item");
  if (!item) return;
  const reasonBox = document.getElementById("reason-box");
  const reason = document.getElementById("reason");
  const labelBox = document.getElementById("label-box");
  const error = document.getElementById("error");
  const labels = ["pass", "failed", "env_error"];
  let pending = null; // the decision waiting for a reason
  let sending = false;

  function newId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function decide(decision, extra) {
    if (sending) return;
    sending = true;
    error.textContent = "";
    const body = Object.assign({ decision: decision, review_id: newId() }, extra || {});
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        let resp;
        try {
          resp = await fetch(item.dataset.decide, {
            method: "POST", credentials: "same-origin",
            headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
          });
        } catch (e) {
          continue; // network hiccup: the same review_id makes the retry replace, not duplicate
        }
        const out = await resp.json();
        if (!resp.ok) { error.textContent = out.error || ("error " + resp.status); return; }
        window.location.assign(out.next);
        return;
      }
      error.textContent = "could not reach the review app; press the key again";
    } finally {
      sending = false;
    }
  }

  function closeBoxes() {
    pending = null;
    reasonBox.hidden = true;
    labelBox.hidden = true;
    reason.value = "";
    reason.blur();
  }

  function askReason(decision, title) {
    pending = decision;
    document.getElementById("reason-title").textContent = title;
    reasonBox.hidden = false;
    reason.focus();
  }

  reasonBox.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (!pending) return;
    const text = reason.value.trim();
    if (pending === "reject" && !text) { error.textContent = "a rejection needs a reason"; return; }
    decide(pending, { reason: text });
  });

  // ---- the screenshot viewer: full size, zoom, previous/next ----------------------------------------------
  const viewer = document.getElementById("viewer");
  const viewerImg = document.getElementById("viewer-img");
  const frames = Array.from(document.querySelectorAll("a.zoom"));
  let shown = -1;
  let zoom = 0; // 0: fit the window; otherwise the scale over the screenshot's own pixels

  function applyZoom() {
    viewer.classList.toggle("fit", zoom === 0);
    if (zoom === 0) { viewerImg.style.width = ""; return; }
    viewerImg.style.width = Math.round(viewerImg.naturalWidth * zoom) + "px";
  }

  function showFrame(i) {
    if (!frames.length) return;
    shown = (i + frames.length) % frames.length;
    viewerImg.onload = applyZoom;
    viewerImg.src = frames[shown].getAttribute("href");
    document.getElementById("viewer-caption").textContent =
      frames[shown].dataset.caption + " (" + (shown + 1) + " of " + frames.length + ")";
    viewer.hidden = false;
    applyZoom();
  }

  function closeViewer() { viewer.hidden = true; shown = -1; }

  frames.forEach(function (a, i) {
    a.addEventListener("click", function (ev) { ev.preventDefault(); zoom = 0; showFrame(i); });
  });
  viewerImg.addEventListener("click", function () { zoom = zoom === 0 ? 1 : 0; applyZoom(); });
  viewer.addEventListener("click", function (ev) { if (ev.target === viewer) closeViewer(); });

  function viewerKey(ev) {
    switch (ev.key) {
      case "Escape": closeViewer(); break;
      case "ArrowRight": showFrame(shown + 1); break;
      case "ArrowLeft": showFrame(shown - 1); break;
      case "+": case "=": zoom = Math.min((zoom || 1) * 1.5, 8); applyZoom(); break;
      case "-": zoom = zoom === 0 ? 0 : zoom / 1.5 < 0.25 ? 0 : zoom / 1.5; applyZoom(); break;
      case "0": zoom = 0; applyZoom(); break;
      case "1": zoom = 1; applyZoom(); break;
      default: return; // decisions wait until the viewer is closed
    }
    ev.preventDefault();
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (!viewer.hidden) { viewerKey(ev); return; }
    if (ev.key === "Escape") { closeBoxes(); return; }
    const tag = document.activeElement && document.activeElement.tagName;
    if (document.activeElement === reason || tag === "SELECT" || tag === "INPUT" || tag === "BUTTON") return;
    if (ev.key === "v") { ev.preventDefault(); zoom = 0; showFrame(0); return; }
    if (!labelBox.hidden) {
      const n = parseInt(ev.key, 10);
      if (n >= 1 && n <= labels.length) { ev.preventDefault(); decide("relabel", { label: labels[n - 1] }); }
      return;
    }
    switch (ev.key) {
      case "a": ev.preventDefault(); decide("accept"); break;
      case "r": ev.preventDefault(); askReason("reject", "why reject"); break;
      case "f": ev.preventDefault(); askReason("flag_verifier", "what is wrong with the verifier"); break;
      case "l":
        if (item.dataset.kind === "trajectory") { ev.preventDefault(); labelBox.hidden = false; }
        else { error.textContent = "a pair has no label to correct: reject it or flag its verifier"; }
        break;
      case "j": window.location.assign(item.dataset.next); break; // stays inside the queue's filter
      case "k": if (item.dataset.prev) window.location.assign(item.dataset.prev); break;
    }
  });
})();
