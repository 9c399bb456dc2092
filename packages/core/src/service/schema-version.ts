/**
 * Schema version ids in the shape of Permify's (an `xid`): 12 bytes = 4 bytes of unix seconds, 5 random bytes per
 * process and a 3-byte counter, written as 20 lowercase base32hex characters (`dc1c65hksdufhivpo1r0`). Ids made by
 * one generator are strictly increasing (as strings), even when the clock stands still or steps back.
 */
const ALPHABET = "0123456789abcdefghijklmnopqrstuv";

function encodeBase32Hex(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const b of bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

export class SchemaVersionGenerator {
  /**
   * With the counter's start, drawn at the first id, not at construction (Workers refuse random values at module
   * evaluation).
   */
  #machine: Uint8Array | undefined;
  #counter = 0;
  #last = new Uint8Array(12);
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  next(): string {
    const bytes = new Uint8Array(12);
    const seconds = Math.floor(this.#now() / 1000) >>> 0;
    new DataView(bytes.buffer).setUint32(0, seconds);
    if (this.#machine === undefined) {
      this.#machine = crypto.getRandomValues(new Uint8Array(5));
      this.#counter = crypto.getRandomValues(new Uint32Array(1))[0]! & 0xffffff;
    }
    bytes.set(this.#machine, 4);
    this.#counter = (this.#counter + 1) & 0xffffff;
    bytes[9] = this.#counter >>> 16;
    bytes[10] = (this.#counter >>> 8) & 0xff;
    bytes[11] = this.#counter & 0xff;
    if (compareBytes(bytes, this.#last) <= 0) {
      // Clock stood still with a wrapped counter, or stepped back: continue from the last id + 1.
      bytes.set(this.#last);
      for (let i = 11; i >= 0; i--) {
        bytes[i] = (bytes[i] + 1) & 0xff;
        if (bytes[i] !== 0) break;
      }
    }
    this.#last = bytes;
    return encodeBase32Hex(bytes);
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
