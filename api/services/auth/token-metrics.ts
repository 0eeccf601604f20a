/** Counts token issuing for the metrics: issued, or refused with the reason the client was given. */
import type { AppContext } from '../../context.ts';

/** The reason label of a refusal: the OAuth error (RFC 6749 5.2) or the problem code. */
function reasonOf(err: unknown): string {
  const e = err as { error?: unknown; code?: unknown } | null;
  if (typeof e?.error === 'string') return e.error;
  if (typeof e?.code === 'string') return e.code;
  return 'internal';
}

/** Runs one issuing under `grant` and counts how it ended. */
export async function countIssue<T>(
  ctx: AppContext,
  grant: string,
  issue: () => Promise<T>,
): Promise<T> {
  try {
    const tokens = await issue();
    ctx.metrics.domain.token(grant, 'issued', 'issued');
    return tokens;
  } catch (err) {
    ctx.metrics.domain.token(grant, 'refused', reasonOf(err));
    throw err;
  }
}
