// Recording: a voice note from the microphone, or a clip from the camera.
// MediaRecorder hands over a chunk every second, and each chunk goes
// straight into a StagedBlob (`db.stageBlob()`): the package keeps it in
// its worker (past 4 MB in a temporary OPFS file), so a long recording
// never piles up in the page. Stopping stores the staged value in its row,
// once.

import { addItem } from './db.js';
import { shrink, waveform } from './thumbs.js';
import { $, describeError, formatDuration, h, toast } from './ui.js';

const TYPES = {
  audio: ['audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus', 'audio/mp4'],
  video: ['video/webm;codecs=vp9,opus', 'video/webm;codecs=vp8,opus', 'video/webm', 'video/mp4'],
};
const TITLES = { audio: 'Voice note', video: 'Camera clip' };

export function createRecorder(db) {
  const dialog = $('#recorder');
  let session = null;

  async function start(kind) {
    if (session) return;
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia(
        kind === 'video' ? { video: { width: 1280, height: 720 }, audio: true } : { audio: true },
      );
    } catch (err) {
      return toast(`No ${kind === 'video' ? 'camera' : 'microphone'} to record from: ${err.message}`, { error: true });
    }
    const mimeType = TYPES[kind].find((t) => MediaRecorder.isTypeSupported(t));
    const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : {});
    let staged;
    try {
      staged = await db.stageBlob();
    } catch (err) {
      for (const t of stream.getTracks()) t.stop();
      return toast(describeError(err), { error: true });
    }
    const s = (session = { kind, stream, recorder, staged, failure: null, started: performance.now() });
    // Appends complete in call order; they need not be awaited. The first
    // one that fails makes the staged value unusable, and is the one to tell.
    recorder.ondataavailable = (e) => e.data.size && staged.append(e.data).catch((err) => (s.failure ??= err));
    s.meter = kind === 'audio' ? loudness(stream) : null;
    s.preview = kind === 'video' ? h('video', { srcObject: stream, muted: true, autoplay: true, playsInline: true }) : s.meter.canvas;
    $('#recorder-title').textContent = `Recording a ${TITLES[kind].toLowerCase()}`;
    $('#recorder-preview').replaceChildren(s.preview);
    $('#recorder-time').textContent = '0:00';
    s.clock = setInterval(() => ($('#recorder-time').textContent = formatDuration((performance.now() - s.started) / 1000)), 250);
    // Timed from when the recorder says it started: a device can take a
    // moment to deliver its first frames.
    recorder.addEventListener('start', () => (s.started = performance.now()), { once: true });
    recorder.start(1000);
    dialog.showModal();
  }

  async function finish(save) {
    const s = session;
    if (!s || s.finishing) return;
    s.finishing = true;
    const stopped = new Promise((resolve) => s.recorder.addEventListener('stop', resolve, { once: true }));
    s.recorder.stop();
    await stopped;
    const duration = (performance.now() - s.started) / 1000;
    const video = s.kind === 'video' ? s.preview : null;
    const thumb = await (video ? shrink(video, video.videoWidth, video.videoHeight) : waveform(s.meter.levels)).catch(() => null);
    clearInterval(s.clock);
    s.meter?.close();
    for (const t of s.stream.getTracks()) t.stop();
    dialog.close();
    session = null;
    if (!save || s.failure) {
      await s.staged.discard();
      if (s.failure) toast(`The recording could not be kept: ${describeError(s.failure)}`, { error: true });
      return;
    }
    const type = s.recorder.mimeType.split(';')[0] || `${s.kind}/webm`;
    const name = `${TITLES[s.kind]} ${stamp()}.${type.split('/')[1]}`;
    try {
      await addItem(
        db,
        {
          name,
          type,
          kind: s.kind,
          size: s.staged.size,
          data: s.staged,
          duration,
          tags: `recording, ${s.kind === 'video' ? 'camera' : 'voice'}`,
          width: video?.videoWidth ?? null,
          height: video?.videoHeight ?? null,
        },
        thumb,
      );
      toast(`Saved ${name}`);
    } catch (err) {
      await s.staged.discard();
      toast(describeError(err), { error: true });
    }
  }

  $('#recorder-stop').addEventListener('click', () => finish(true));
  $('#recorder-cancel').addEventListener('click', () => finish(false));
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    finish(false);
  });
  return { start };
}

/** "2026-11-30 14.05.09": a name that sorts and says when. */
function stamp() {
  const d = new Date();
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}.${p(d.getMinutes())}.${p(d.getSeconds())}`;
}

/**
 * The microphone's loudness ten times a second: drawn live as a scrolling
 * waveform, and kept (a few numbers a second) for the voice note's card.
 */
function loudness(stream) {
  const context = new AudioContext();
  const analyser = context.createAnalyser();
  analyser.fftSize = 2048;
  context.createMediaStreamSource(stream).connect(analyser);
  const samples = new Float32Array(analyser.fftSize);
  const levels = [];
  const canvas = h('canvas', { width: 480, height: 120, className: 'meter-live' });
  const g = canvas.getContext('2d');
  const timer = setInterval(() => {
    analyser.getFloatTimeDomainData(samples);
    levels.push(Math.sqrt(samples.reduce((sum, x) => sum + x * x, 0) / samples.length));
    const shown = levels.slice(-60);
    const peak = Math.max(...shown, 0.02);
    g.clearRect(0, 0, canvas.width, canvas.height);
    g.fillStyle = getComputedStyle(canvas).color;
    shown.forEach((level, i) => {
      const bar = Math.max(3, (level / peak) * canvas.height * 0.9);
      g.fillRect(i * 8, (canvas.height - bar) / 2, 5, bar);
    });
  }, 100);
  return {
    canvas,
    get levels() {
      // At most 64 bars for the card, each the loudest of its stretch.
      const n = Math.min(64, levels.length);
      return Array.from({ length: n }, (_, i) =>
        Math.max(...levels.slice(Math.floor((i * levels.length) / n), Math.floor(((i + 1) * levels.length) / n))),
      );
    },
    close() {
      clearInterval(timer);
      context.close();
    },
  };
}
