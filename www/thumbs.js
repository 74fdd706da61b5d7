// Thumbnails, made in the page from the file itself before it is stored:
// a photo scaled down with createImageBitmap, a video's frame from a
// <video>, an audio file's waveform. Each is a small image (WebP where the
// browser writes it, else PNG) kept in the `thumbs` table.

const EDGE = 480; // the longer side of a thumbnail, in pixels
const WAVE_LIMIT = 8 << 20; // audio files decoded for a waveform, at most (the whole file is read)

/**
 * What the page can learn of a file: { thumb (a Blob or null), width,
 * height, duration }. Never rejects: a file the browser cannot decode is
 * still stored, with an icon in the grid.
 */
export async function describe(blob, kind) {
  try {
    if (kind === 'image') return await fromImage(blob);
    if (kind === 'video') return await fromVideo(blob);
    return await fromAudio(blob);
  } catch {
    return { thumb: null, width: null, height: null, duration: null };
  }
}

async function fromImage(blob) {
  const bitmap = await createImageBitmap(blob);
  try {
    return { thumb: await shrink(bitmap, bitmap.width, bitmap.height), width: bitmap.width, height: bitmap.height, duration: null };
  } finally {
    bitmap.close();
  }
}

/** A frame a tenth of the way in (at most 2 s), so a fade-in does not make a black card. */
async function fromVideo(blob) {
  const video = document.createElement('video');
  video.muted = true;
  video.preload = 'auto';
  const url = URL.createObjectURL(blob);
  try {
    video.src = url;
    await event(video, 'loadeddata');
    const duration = Number.isFinite(video.duration) ? video.duration : null;
    video.currentTime = Math.min(2, (duration ?? 0) / 10);
    await event(video, 'seeked');
    return {
      thumb: await shrink(video, video.videoWidth, video.videoHeight),
      width: video.videoWidth,
      height: video.videoHeight,
      duration,
    };
  } finally {
    video.removeAttribute('src');
    video.load();
    URL.revokeObjectURL(url);
  }
}

async function fromAudio(blob) {
  if (blob.size > WAVE_LIMIT) return { thumb: null, width: null, height: null, duration: await mediaDuration(blob) };
  // Decoded at a low rate: a waveform needs no more, and memory stays small.
  const audio = await new OfflineAudioContext(1, 1, 8000).decodeAudioData(await blob.arrayBuffer());
  const samples = audio.getChannelData(0);
  const bars = 64;
  const levels = Array.from({ length: bars }, (_, i) => {
    const from = Math.floor((i * samples.length) / bars);
    const to = Math.floor(((i + 1) * samples.length) / bars);
    let sum = 0;
    for (let j = from; j < to; j++) sum += samples[j] * samples[j];
    return Math.sqrt(sum / Math.max(1, to - from));
  });
  return { thumb: await waveform(levels), width: null, height: null, duration: audio.duration };
}

async function mediaDuration(blob) {
  const audio = document.createElement('audio');
  const url = URL.createObjectURL(blob);
  try {
    audio.src = url;
    await event(audio, 'loadedmetadata');
    return Number.isFinite(audio.duration) ? audio.duration : null;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * A waveform card from loudness levels (any scale: they are normalized),
 * for an audio file or a voice note recorded in the page.
 */
export function waveform(levels) {
  const canvas = new OffscreenCanvas(EDGE, (EDGE * 3) / 4);
  const g = canvas.getContext('2d');
  const { width, height } = canvas;
  const bg = g.createLinearGradient(0, 0, width, height);
  bg.addColorStop(0, '#4338ca');
  bg.addColorStop(1, '#db2777');
  g.fillStyle = bg;
  g.fillRect(0, 0, width, height);
  const peak = Math.max(...levels, 1e-6);
  const step = width / Math.max(levels.length, 1);
  g.fillStyle = 'rgba(255, 255, 255, 0.9)';
  levels.forEach((level, i) => {
    const h = Math.max(4, (level / peak) * height * 0.6);
    roundedBar(g, i * step + step * 0.2, (height - h) / 2, step * 0.6, h);
  });
  return encode(canvas);
}

function roundedBar(g, x, y, w, h) {
  g.beginPath();
  g.roundRect(x, y, w, h, w / 2);
  g.fill();
}

/** `source` (a bitmap, a video) drawn at most EDGE pixels on its longer side. */
export function shrink(source, width, height) {
  if (!width || !height) throw new Error('nothing to draw');
  const scale = Math.min(1, EDGE / Math.max(width, height));
  const canvas = new OffscreenCanvas(Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)));
  canvas.getContext('2d').drawImage(source, 0, 0, canvas.width, canvas.height);
  return encode(canvas);
}

// A browser that cannot write WebP writes PNG, and says so in the Blob's type.
const encode = (canvas) => canvas.convertToBlob({ type: 'image/webp', quality: 0.8 });

function event(target, name) {
  return new Promise((resolve, reject) => {
    target.addEventListener(name, resolve, { once: true });
    target.addEventListener('error', () => reject(target.error ?? new Error(`${name} never came`)), { once: true });
  });
}
