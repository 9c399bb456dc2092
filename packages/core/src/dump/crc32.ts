/**
 * CRC-32 (IEEE 802.3, the polynomial of zlib and gzip), incremental: `crc32(bytes, previous)` continues a checksum.
 * Runtime-neutral; Node callers may pass zlib's native `crc32` instead (the same function, faster).
 */
export type Crc32 = (bytes: Uint8Array, previous?: number) => number;

const TABLE = (() => {
  const table = new Int32Array(256 * 4);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  // slicing-by-4: table[k*256 + n] is the CRC of byte n followed by k zero bytes
  for (let n = 0; n < 256; n++) {
    let c = table[n]!;
    for (let k = 1; k < 4; k++) {
      c = table[c & 0xff]! ^ (c >>> 8);
      table[k * 256 + n] = c;
    }
  }
  return table;
})();

export const crc32: Crc32 = (bytes, previous = 0) => {
  const t = TABLE;
  let c = ~previous;
  let i = 0;
  const end4 = bytes.length & ~3;
  for (; i < end4; i += 4) {
    c ^= bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    c = t[768 + (c & 0xff)]! ^ t[512 + ((c >>> 8) & 0xff)]! ^ t[256 + ((c >>> 16) & 0xff)]! ^ t[c >>> 24]!;
  }
  for (; i < bytes.length; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
};

/** The trailer's form of a checksum: 8 lowercase hex digits. */
export const crcHex = (crc: number): string => crc.toString(16).padStart(8, "0");
