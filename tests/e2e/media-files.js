// Media files made in the page, for the demo's test and benchmark (served to
// the page by them; the demo app never loads this): a PNG drawn on a canvas,
// a WAV built sample by sample, and a WebM recorded from a canvas with
// MediaRecorder, then re-muxed into a file as long as asked for.
//
// Why re-mux: MediaRecorder writes a live stream (a Segment and Clusters of
// unknown size, no Duration, no Cues), so a player can only find a time by
// reading up to it. `longWebm` keeps the recorded frames and writes a file a
// player can seek in: known sizes, a Duration, and a Cue for every Cluster,
// each of which starts on a keyframe. To reach a size it repeats the clip
// with shifted timecodes; every repetition starts on a keyframe, so the
// result is a genuine, playable video.

/**
 * A PNG of a landscape drawn on a canvas: a sky of `hue`, a sun and three
 * ranges of hills, shaped by the name (the same name, the same picture).
 */
export async function pngFile(name, { width = 960, height = 640, hue = 200 } = {}) {
  const canvas = new OffscreenCanvas(width, height);
  const g = canvas.getContext('2d');
  let seed = [...name].reduce((n, c) => (n * 31 + c.charCodeAt(0)) >>> 0, 7);
  const random = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  const sky = g.createLinearGradient(0, 0, 0, height);
  sky.addColorStop(0, `hsl(${hue} 65% 55%)`);
  sky.addColorStop(1, `hsl(${hue + 35} 85% 82%)`);
  g.fillStyle = sky;
  g.fillRect(0, 0, width, height);
  g.fillStyle = `hsl(${hue + 180} 90% 88%)`;
  g.beginPath();
  g.arc(width * (0.2 + 0.6 * random()), height * (0.2 + 0.15 * random()), height * 0.09, 0, 2 * Math.PI);
  g.fill();
  for (let layer = 0; layer < 3; layer++) {
    g.fillStyle = `hsl(${hue + 20 + layer * 15} ${35 + layer * 5}% ${48 - layer * 14}%)`;
    g.beginPath();
    g.moveTo(0, height);
    for (let x = 0; x <= width; x += width / 8) g.lineTo(x, height * (0.45 + layer * 0.13 + 0.12 * random()));
    g.lineTo(width, height);
    g.fill();
  }
  const blob = await canvas.convertToBlob({ type: 'image/png' });
  return new File([blob], name, { type: 'image/png', lastModified: Date.now() });
}

/** A 16-bit mono WAV: a tone that glides up, `seconds` long. */
export function wavFile(name, { seconds = 2, rate = 22050 } = {}) {
  const n = Math.round(seconds * rate);
  const out = new DataView(new ArrayBuffer(44 + 2 * n));
  const ascii = (at, s) => {
    for (let i = 0; i < s.length; i++) out.setUint8(at + i, s.charCodeAt(i));
  };
  ascii(0, 'RIFF');
  out.setUint32(4, 36 + 2 * n, true);
  ascii(8, 'WAVEfmt ');
  out.setUint32(16, 16, true); // fmt chunk size
  out.setUint16(20, 1, true); // PCM
  out.setUint16(22, 1, true); // mono
  out.setUint32(24, rate, true);
  out.setUint32(28, 2 * rate, true); // bytes per second
  out.setUint16(32, 2, true); // bytes per frame
  out.setUint16(34, 16, true); // bits per sample
  ascii(36, 'data');
  out.setUint32(40, 2 * n, true);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    phase += (2 * Math.PI * (220 + 220 * (t / seconds))) / rate;
    const envelope = Math.min(1, t * 20, (seconds - t) * 20) * (0.6 + 0.4 * Math.sin(t * 9));
    out.setInt16(44 + 2 * i, Math.round(envelope * 0.5 * 32767 * Math.sin(phase)), true);
  }
  return new File([out.buffer], name, { type: 'audio/wav', lastModified: Date.now() });
}

/**
 * Records `seconds` of an animated canvas with MediaRecorder: a moving
 * stripe and a clock, over noise when `noise` (noise keeps the encoder
 * from compressing, so the file gets near `bitrate`). A keyframe every
 * `keyframeMs` where the browser takes the option. Resolves to a Blob.
 */
export async function recordWebm({ seconds = 3, width = 320, height = 180, bitrate = 1e6, keyframeMs = 500, noise = false } = {}) {
  const canvas = document.createElement('canvas');
  Object.assign(canvas, { width, height });
  const g = canvas.getContext('2d');
  // Noise: one random field twice the frame's size, drawn at a new offset
  // each frame (cheap, and no two frames alike).
  const grain = noise ? new OffscreenCanvas(2 * width, 2 * height) : null;
  if (grain) {
    const field = new ImageData(grain.width, grain.height);
    for (let at = 0; at < field.data.length; at += 65536) crypto.getRandomValues(field.data.subarray(at, at + 65536));
    for (let i = 3; i < field.data.length; i += 4) field.data[i] = 255;
    grain.getContext('2d').putImageData(field, 0, 0);
  }
  const t0 = performance.now();
  let frame = requestAnimationFrame(function draw(now) {
    const t = (now - t0) / 1000;
    if (grain) {
      g.drawImage(grain, -Math.random() * width, -Math.random() * height);
    } else {
      // A sun crossing a dusk sky over two ranges of hills.
      const sky = g.createLinearGradient(0, 0, 0, height);
      sky.addColorStop(0, `hsl(${220 + 20 * (t / seconds)} 60% 45%)`);
      sky.addColorStop(1, 'hsl(25 90% 70%)');
      g.fillStyle = sky;
      g.fillRect(0, 0, width, height);
      g.fillStyle = 'hsl(45 100% 85%)';
      g.beginPath();
      g.arc(width * (0.15 + 0.7 * (t / seconds)), height * 0.35, height * 0.1, 0, 2 * Math.PI);
      g.fill();
      for (const [i, color] of ['hsl(250 30% 35%)', 'hsl(260 35% 20%)'].entries()) {
        g.fillStyle = color;
        g.beginPath();
        g.moveTo(0, height);
        for (let x = 0; x <= width; x += width / 6) g.lineTo(x, height * (0.6 + 0.15 * i) + Math.sin(x / 37 + i * 2) * height * 0.06);
        g.lineTo(width, height);
        g.fill();
      }
    }
    g.fillStyle = '#fff';
    g.font = `bold ${Math.round(height / 10)}px sans-serif`;
    g.textAlign = 'center'; // low in the middle: a 4:3 thumbnail of the frame keeps it
    g.fillText(`${t.toFixed(1)} s`, width / 2, height * 0.93);
    frame = requestAnimationFrame(draw);
  });
  const mimeType = ['video/webm;codecs=vp8', 'video/webm'].find((t) => MediaRecorder.isTypeSupported(t));
  const recorder = new MediaRecorder(canvas.captureStream(30), {
    mimeType,
    videoBitsPerSecond: bitrate,
    videoKeyFrameIntervalDuration: keyframeMs,
  });
  const chunks = [];
  recorder.ondataavailable = (e) => chunks.push(e.data);
  const stopped = new Promise((resolve) => (recorder.onstop = resolve));
  recorder.start(1000);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  recorder.stop();
  await stopped;
  cancelAnimationFrame(frame);
  return new Blob(chunks, { type: 'video/webm' });
}

// EBML element IDs (Matroska), with their marker bits, as written.
const ID = {
  EBML: 0x1a45dfa3,
  Segment: 0x18538067,
  SeekHead: 0x114d9b74,
  Seek: 0x4dbb,
  SeekID: 0x53ab,
  SeekPosition: 0x53ac,
  Info: 0x1549a966,
  TimecodeScale: 0x2ad7b1,
  Duration: 0x4489,
  MuxingApp: 0x4d80,
  WritingApp: 0x5741,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackType: 0x83,
  Cluster: 0x1f43b675,
  Timecode: 0xe7,
  SimpleBlock: 0xa3,
  BlockGroup: 0xa0,
  Block: 0xa1,
  ReferenceBlock: 0xfb,
  Cues: 0x1c53bb6b,
  CuePoint: 0xbb,
  CueTime: 0xb3,
  CueTrackPositions: 0xb7,
  CueTrack: 0xf7,
  CueClusterPosition: 0xf1,
};
// Children of a Cluster: what may follow inside one of unknown size.
const CLUSTER_CHILDREN = new Set([ID.Timecode, ID.SimpleBlock, ID.BlockGroup, 0xa7 /* Position */, 0xab /* PrevSize */]);

/** A variable-length integer at `at`: { value, length, unknown }; IDs keep their marker (`marker`). */
function vint(bytes, at, marker = false) {
  const first = bytes[at];
  const length = Math.clz32(first) - 23;
  if (length < 1 || length > 8) throw new Error(`bad EBML vint at ${at}`);
  let value = marker ? first : first & (0xff >> length);
  let ones = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + bytes[at + i];
    ones &&= bytes[at + i] === 0xff;
  }
  return { value, length, unknown: !marker && ones };
}

/** The element at `at`: { id, at, start (of its data), end (null if its size is unknown) }. */
function element(bytes, at) {
  const id = vint(bytes, at, true);
  const size = vint(bytes, at + id.length);
  const start = at + id.length + size.length;
  return { id: id.value, at, start, end: size.unknown ? null : start + size.value };
}

/** The children of [start, end) as elements. */
function* children(bytes, start, end) {
  for (let at = start; at < end; ) {
    const e = element(bytes, at);
    yield e;
    at = e.end;
  }
}

const uintOf = (bytes, e) => bytes.subarray(e.start, e.end).reduce((n, b) => n * 256 + b, 0);

/**
 * The recorded video's track and frames: { ebmlHeader, track (its
 * TrackEntry's children: [{ id, bytes }]), number, scale, frames: [{ time,
 * key, flags, data }] }, time in timecode units from 0.
 */
function parse(bytes) {
  const header = element(bytes, 0);
  if (header.id !== ID.EBML) throw new Error('not an EBML file');
  const segment = element(bytes, header.end);
  if (segment.id !== ID.Segment) throw new Error('no Segment');
  const out = { ebmlHeader: bytes.subarray(0, header.end), scale: 1e6, frames: [] };
  const segmentEnd = segment.end ?? bytes.length;
  for (let at = segment.start; at < segmentEnd; ) {
    const e = element(bytes, at);
    if (e.id === ID.Info) {
      for (const c of children(bytes, e.start, e.end)) if (c.id === ID.TimecodeScale) out.scale = uintOf(bytes, c);
    } else if (e.id === ID.Tracks) {
      for (const t of children(bytes, e.start, e.end)) {
        const fields = [...children(bytes, t.start, t.end)];
        const field = (id) => fields.find((c) => c.id === id);
        if (t.id === ID.TrackEntry && uintOf(bytes, field(ID.TrackType)) === 1) {
          out.number = uintOf(bytes, field(ID.TrackNumber));
          out.track = fields.map((c) => ({ id: c.id, bytes: bytes.subarray(c.at, c.end) }));
        }
      }
    } else if (e.id === ID.Cluster) {
      let clusterTime = 0;
      let c = e.start;
      const end = e.end ?? segmentEnd;
      while (c < end) {
        const child = element(bytes, c);
        if (e.end === null && !CLUSTER_CHILDREN.has(child.id)) break;
        if (child.id === ID.Timecode) clusterTime = uintOf(bytes, child);
        else if (child.id === ID.SimpleBlock) out.frames.push(block(bytes, child.start, child.end, clusterTime, null));
        else if (child.id === ID.BlockGroup) {
          const parts = [...children(bytes, child.start, child.end)];
          const b = parts.find((p) => p.id === ID.Block);
          out.frames.push(block(bytes, b.start, b.end, clusterTime, !parts.some((p) => p.id === ID.ReferenceBlock)));
        }
        c = child.end;
      }
      at = c;
      continue;
    }
    if (e.end === null) throw new Error(`element ${e.id.toString(16)} of unknown size`);
    at = e.end;
  }
  if (out.number === undefined) throw new Error('no video track');
  out.frames = out.frames.filter((f) => f.track === out.number);
  const first = out.frames[0]?.time ?? 0;
  for (const f of out.frames) f.time -= first;
  return out;
}

/** A (Simple)Block's frame: its track, absolute time, keyframe flag and bytes. */
function block(bytes, start, end, clusterTime, key) {
  const track = vint(bytes, start);
  const at = start + track.length;
  const relative = new DataView(bytes.buffer, bytes.byteOffset + at, 2).getInt16(0);
  const flags = bytes[at + 2];
  return { track: track.value, time: clusterTime + relative, key: key ?? (flags & 0x80) !== 0, flags, data: bytes.subarray(at + 3, end) };
}

// Writing: every size is an 8-byte vint, so sizes are known before the bytes.
const idBytes = (id) => {
  const out = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) out.unshift(v % 256);
  return out;
};
const be = (value, width) => {
  const out = new Array(width);
  for (let i = width - 1; i >= 0; i--, value = Math.floor(value / 256)) out[i] = value % 256;
  return out;
};
const head = (id, size) => [...idBytes(id), 0x01, ...be(size, 7)];
const cat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};
const el = (id, payload) => cat(head(id, payload.length), payload);
const uint = (id, value) => el(id, be(value, 8));
const float = (id, value) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, value);
  return el(id, [...b]);
};
const text = (id, s) => el(id, [...new TextEncoder().encode(s)]);

/**
 * A WebM of at least `targetBytes` (and at least `clip`'s length): the
 * clip's video frames, repeated with shifted timecodes, in Clusters that
 * each start on a keyframe, with a Duration and Cues. Resolves to a Blob
 * (made of parts: one Cluster's bytes are written once per repetition).
 */
export async function longWebm(clip, targetBytes = 0) {
  const src = parse(new Uint8Array(await clip.arrayBuffer()));
  const frames = src.frames;
  if (!frames.length || !frames[0].key) throw new Error('the clip does not start with a keyframe');
  const deltas = frames
    .slice(1)
    .map((f, i) => f.time - frames[i].time)
    .sort((a, b) => a - b);
  const frameTime = deltas[deltas.length >> 1] || Math.round(33e6 / src.scale);
  const period = frames[frames.length - 1].time + frameTime;
  // Groups of pictures: a keyframe and the frames up to the next one.
  const gops = [];
  for (const f of frames) {
    if (f.key) gops.push({ time: f.time, frames: [] });
    gops[gops.length - 1].frames.push(f);
  }
  // One Cluster body per group, without its Timecode (which repetitions shift).
  const bodies = gops.map((gop) =>
    cat(
      ...gop.frames.map((f) => {
        const relative = f.time - gop.time;
        if (relative > 32767) throw new Error('a group of pictures longer than a Block timecode reaches');
        return el(ID.SimpleBlock, cat([0x81, ...be(relative, 2), (f.flags & 0x7f) | (f.key ? 0x80 : 0)], f.data));
      }),
    ),
  );
  // A Cluster: its ID and size, a Timecode (8-byte number), the body.
  const timecodeLength = uint(ID.Timecode, 0).length;
  const clusterLength = (body) => head(ID.Cluster, 0).length + timecodeLength + body.length;
  const reps = Math.max(1, Math.ceil(targetBytes / bodies.reduce((n, b) => n + clusterLength(b), 0)));
  // The track, renumbered 1 (the SimpleBlocks say track 1).
  const trackBody = cat(...src.track.map((c) => (c.id === ID.TrackNumber ? uint(ID.TrackNumber, 1) : c.bytes)));
  const tracks = el(ID.Tracks, el(ID.TrackEntry, trackBody));
  const info = el(
    ID.Info,
    cat(
      uint(ID.TimecodeScale, src.scale),
      float(ID.Duration, reps * period),
      text(ID.MuxingApp, 'resq-wasm test remux'),
      text(ID.WritingApp, 'resq-wasm test remux'),
    ),
  );
  // Cluster positions are offsets in the Segment's data; Cues sit before the
  // Clusters, so their size (fixed: every number is 8 bytes) comes first.
  const cuePointSize = el(
    ID.CuePoint,
    cat(uint(ID.CueTime, 0), el(ID.CueTrackPositions, cat(uint(ID.CueTrack, 1), uint(ID.CueClusterPosition, 0)))),
  ).length;
  const seekEntry = (id, pos) => el(ID.Seek, cat(el(ID.SeekID, idBytes(id)), uint(ID.SeekPosition, pos)));
  const seekHeadSize = el(ID.SeekHead, cat(seekEntry(ID.Info, 0), seekEntry(ID.Tracks, 0), seekEntry(ID.Cues, 0))).length;
  const cuesSize = head(ID.Cues, 0).length + cuePointSize * gops.length * reps;
  const infoAt = seekHeadSize;
  const tracksAt = infoAt + info.length;
  const cuesAt = tracksAt + tracks.length;
  const seekHead = el(ID.SeekHead, cat(seekEntry(ID.Info, infoAt), seekEntry(ID.Tracks, tracksAt), seekEntry(ID.Cues, cuesAt)));
  const cuePoints = [];
  const clusters = [];
  let at = cuesAt + cuesSize;
  for (let r = 0; r < reps; r++) {
    gops.forEach((gop, i) => {
      const time = r * period + gop.time;
      cuePoints.push(
        el(ID.CuePoint, cat(uint(ID.CueTime, time), el(ID.CueTrackPositions, cat(uint(ID.CueTrack, 1), uint(ID.CueClusterPosition, at))))),
      );
      const timecode = uint(ID.Timecode, time);
      clusters.push(Uint8Array.from(head(ID.Cluster, timecode.length + bodies[i].length)), timecode, bodies[i]);
      at += clusterLength(bodies[i]);
    });
  }
  const cues = el(ID.Cues, cat(...cuePoints));
  if (cues.length !== cuesSize) throw new Error('Cues size mismatch');
  return new Blob([src.ebmlHeader, Uint8Array.from(head(ID.Segment, at)), seekHead, info, tracks, cues, ...clusters], {
    type: 'video/webm',
  });
}
