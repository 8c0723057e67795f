/**
 * @parley/browser: the sync frames between a browser replica and its node
 * (wire.ts). The deltas and digests inside come from the crdt targets'
 * generators; a frame is compared by its fields and the canonical encoding
 * of what it carries.
 */
import {
  decodeFrame,
  encodeAck,
  encodeDeltaFrame,
  encodeDigestFrame,
  encodeError,
  encodeHello,
  encodeWelcome,
  type Frame,
} from '@parley/browser/wire';
import { encodeDelta, encodeDigest } from '@parley/crdt';
import type { Gen } from '../gen.js';
import type { Target } from '../target.js';
import { crdtTargets } from './crdt.js';

const MAX_FRAME = 4 * 1_048_576;
const deltaTarget = crdtTargets.find((t) => t.name === 'crdt.decodeDelta') as Target;
const digestTarget = crdtTargets.find((t) => t.name === 'crdt.decodeDigest') as Target;

function generate(g: Gen): Frame {
  switch (g.int(6)) {
    case 0:
      return { tag: 0x01, replicaId: g.string(64, 1), digest: digestTarget.generate(g) as never };
    case 1:
      return { tag: 0x02, nodeId: g.string(64), maxFrameBytes: g.uint(), maxTtlSeconds: g.uint(), nowMs: g.uint() };
    case 2:
      return { tag: 0x03, digest: digestTarget.generate(g) as never };
    case 3: {
      const delta = deltaTarget.generate(g) as never;
      return { tag: 0x04, seq: g.uint(), delta, bytes: new Uint8Array(0) };
    }
    case 4:
      return { tag: 0x05, seq: g.uint() };
    default:
      return { tag: 0x06, code: g.string(32), message: g.string(256) };
  }
}

function encode(f: Frame): Uint8Array {
  switch (f.tag) {
    case 0x01:
      return encodeHello(f.replicaId, f.digest);
    case 0x02:
      return encodeWelcome(f.nodeId, f.maxFrameBytes, f.maxTtlSeconds, f.nowMs);
    case 0x03:
      return encodeDigestFrame(f.digest);
    case 0x04:
      return encodeDeltaFrame(f.seq, encodeDelta(f.delta));
    case 0x05:
      return encodeAck(f.seq);
    default:
      return encodeError(f.code, f.message);
  }
}

/** A frame as plain data: what it carries in its canonical encoding. */
function normalize(f: Frame): unknown {
  if (f.tag === 0x01) return { ...f, digest: encodeDigest(f.digest) };
  if (f.tag === 0x03) return { tag: f.tag, digest: encodeDigest(f.digest) };
  if (f.tag === 0x04) return { tag: f.tag, seq: f.seq, delta: encodeDelta(f.delta) };
  return f;
}

export const browserTargets: Target[] = [
  {
    name: 'browser.decodeFrame',
    codes: ['decode_error'],
    share: 0.5,
    generate,
    encode,
    decode: (bytes: Uint8Array) => decodeFrame(bytes, MAX_FRAME),
    normalize,
  } satisfies Target<Frame>,
] as Target[];
