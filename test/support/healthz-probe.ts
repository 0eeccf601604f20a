/** GET /healthz back to back until stop(): how many answered, how many failed, the longest gap. */
export function probeHealthz(baseUrl: string) {
  const at: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const r = await fetch(`${baseUrl}/healthz`).catch(() => null);
      if (r?.status === 200) at.push(performance.now());
      else failures++;
      await r?.arrayBuffer();
    }
  })();
  return async () => {
    running = false;
    await loop;
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    return { answers: at.length, failures, longestGapMs: Math.max(0, ...gaps) };
  };
}
