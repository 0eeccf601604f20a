/**
 * The AWS KMS API (contract 10) at POST /, on Express for an app built without the runtime lane
 * (createApp alone; the listener's lane serves every POST / first): the same core
 * (api/http/aws-kms.ts). No 405 helper here:
 * GET / is the service's landing page, served by another router.
 */
import { Router } from 'express';
import type { AppContext } from '../context.ts';
import { awsAnswer } from '../http/aws-kms.ts';

/** Mounted at /. */
export function createAwsKmsRouter(ctx: AppContext): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const answer = await awsAnswer(ctx, req, String(req.id), (claims) => {
      req.auth = claims;
    });
    if (answer.status >= 400 && !req.readableEnded) res.setHeader('Connection', 'close');
    res.status(answer.status).set(answer.headers).send(answer.body);
  });
  return router;
}
