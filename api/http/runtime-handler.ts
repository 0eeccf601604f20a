/** The Express handler over a runtime operation (api/services/crypto/batch.ts). */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { runRuntime, type Operation } from '../services/crypto/batch.ts';

/** Answers the operation's (or batch's) result as JSON. */
export function runtimeHandler(ctx: AppContext, action: string, op: Operation) {
  return async (req: Request, res: Response) => {
    res.json(await runRuntime(ctx, req.auth, action, op, req.body));
  };
}
