import { createHash } from 'node:crypto';

describe('runtime', () => {
  it('when the suite starts, then it runs on Node 24', () => {
    expect(process.versions.node.split('.')[0]).toBe('24');
    expect(createHash('sha256').update('').digest('hex')).toMatch(/^e3b0/);
  });
});
