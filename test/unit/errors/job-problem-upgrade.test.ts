/**
 * Review R1: a job that failed before the upgrade keeps its failedReason in Redis for
 * JOB_RETENTION_SECONDS, in the old shape. Every old code decodes by code except the one the
 * catalogue renamed (cms_decryption_failed → decryption_failed): that one becomes a 500 whose
 * detail is the raw stored JSON.
 */
import { decodeProblem } from '../../../shared/queues/problems.ts';

describe('review R1: job problems stored before the restructuring', () => {
  it('when a job failed with the old CMS decryption failure, then it still reads as decryption-failed (400)', () => {
    const old = JSON.stringify({
      code: 'cms_decryption_failed',
      message: 'the content could not be decrypted',
      status: 422,
      slug: 'cms-decryption-failed',
      title: 'CMS Decryption Failed',
    });
    const error = decodeProblem(old);
    expect([error.code, error.status]).toEqual(['decryption_failed', 400]);
  });
});
