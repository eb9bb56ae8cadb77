import { OWNER_TOKEN_BITS, ownerToken } from './owner-token';

/** The 128 bits a token encodes, most significant first. */
function bitsOf(token: string): number[] {
  const bytes = Buffer.from(token, 'base64url');
  expect(bytes).toHaveLength(OWNER_TOKEN_BITS / 8);
  return Array.from({ length: OWNER_TOKEN_BITS }, (_, i) => (bytes[i >> 3] >> (7 - (i & 7))) & 1);
}

describe('ownerToken', () => {
  it('is 22 base64url characters: 128 bits, no padding', () => {
    const token = ownerToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{21}[AQgw]$/);
    expect(Buffer.from(token, 'base64url').toString('base64url')).toBe(token);
  });

  it('never repeats over several refills of its random pool', () => {
    const tokens = Array.from({ length: 20_000 }, ownerToken);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('sets each of its 128 bits in about half the tokens', () => {
    const samples = 4_000;
    const ones = new Array<number>(OWNER_TOKEN_BITS).fill(0);
    for (let n = 0; n < samples; n++) bitsOf(ownerToken()).forEach((bit, i) => (ones[i] += bit));
    // A fair bit lands within ±5 standard deviations (±158 of 2,000) of half, but for about one run in 10⁴.
    for (const count of ones) expect(Math.abs(count - samples / 2)).toBeLessThan(160);
  });
});
