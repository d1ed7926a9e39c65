// A recording's moment, played beside its citation: a button naming the moment (kb's own, from the
// answer's citation: kb_core.storage.moments) and an <audio> (or <video>, for a film) that plays the
// recording from the moment's start and pauses at its end. The recording's bytes come from GET
// /recordings/{path}, fetched like any request (with the token) and played from a blob: URL of them,
// never a URL from data; the player's own controls play on past the end.

import { checked, documentPath, request } from "./api.js";
import { el, recentlyUsed } from "./dom.js";

const KEPT = 3; // recordings kept (as blob: URLs) for playing again; a URL let go of is revoked
const recordings = recentlyUsed(KEPT, (url) => URL.revokeObjectURL(url));

/** ``HH:MM:SS`` of whole seconds, as kb writes a moment. */
export function clock(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  const two = (n) => String(n).padStart(2, "0");
  return `${two(Math.floor(whole / 3600))}:${two(Math.floor(whole / 60) % 60)}:${two(whole % 60)}`;
}

async function recordingUrl(path) {
  const kept = recordings.get(path);
  if (kept) return kept;
  const address = `/recordings/${documentPath(path).slice("/documents/".length)}`;
  const blob = await (await checked(await request(address))).blob();
  if (!/^(audio|video)\//.test(blob.type)) throw new Error("the server did not send a recording");
  const url = URL.createObjectURL(blob); // a blob: URL of the server's own bytes
  recordings.set(path, url);
  return url;
}

function loaded(player) {
  if (player.readyState >= 1) return Promise.resolve();
  return new Promise((resolve, reject) => {
    player.addEventListener("loadedmetadata", resolve, { once: true });
    player.addEventListener("error", () => reject(new Error("this browser cannot play the recording")), { once: true });
  });
}

async function play(path, moment, player, button, note) {
  button.disabled = true;
  note.textContent = "";
  try {
    if (!player.src) player.src = await recordingUrl(path);
    await loaded(player);
    player.hidden = false;
    player.dataset.end = typeof moment.end === "number" ? String(moment.end) : "";
    player.currentTime = moment.start;
    player.dataset.started = String(moment.start);
    await player.play().catch(() => {}); // (a browser that will not play unasked: the controls are there)
  } catch (error) {
    note.textContent = `cannot play it: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

/** Pause at the moment's end, once (then the player's own controls play on); the recording's end ends it too. */
function stopAtEnd(player) {
  const stop = () => {
    player.pause();
    player.dataset.stopped = player.dataset.end || String(player.currentTime);
    player.dataset.end = "";
  };
  player.addEventListener("timeupdate", () => {
    if (player.dataset.end && player.currentTime >= Number(player.dataset.end)) stop();
  });
  player.addEventListener("ended", () => {
    if (player.dataset.end) stop();
  });
}

/** The moment of a recording's citation (``item.moment``), a button that plays it and its player; null for other citations. */
export function momentPlayer(item) {
  const moment = item.moment;
  if (!moment || typeof moment.start !== "number" || !item.citation) return null;
  const path = item.citation.path;
  const span = `${clock(moment.start)}–${typeof moment.end === "number" ? clock(moment.end) : "end"}`;
  const player = el(moment.media === "video" ? "video" : "audio", { className: "moment-player", hidden: true });
  player.controls = true;
  player.preload = "metadata";
  stopAtEnd(player);
  const note = el("span", { className: "moment-note muted small" });
  const button = el("button", {
    type: "button",
    className: "moment-play",
    title: `play ${path} from ${span}`,
    aria: { label: `play the recording from ${span}` },
  }, `▶ ${span}`);
  button.addEventListener("click", () => play(path, moment, player, button, note));
  const fragment = `t=${clock(moment.start)}${typeof moment.end === "number" ? `,${clock(moment.end)}` : ""}`;
  return el("span", { className: "moment", data: { fragment } }, button, note, player);
}
