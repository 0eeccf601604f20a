import { AppError, errorFromData, problem, problemDocument } from '../../../shared/errors/index.ts';
import { decodeProblem, encodeProblem, problemOf } from '../../../shared/queues/index.ts';

const BASE = 'https://keyward.example';

describe('errors across threads and processes', () => {
  it('when an error becomes plain data, then it is {code, message, details} only', () => {
    expect(
      problem('cms_malformed', 'bad tag', {
        details: { offset: 3 },
        cause: new Error('x'),
      }).toJSON(),
    ).toEqual({ code: 'cms_malformed', message: 'bad tag', details: { offset: 3 } });
    expect(problem('conflict', 'taken').toJSON()).toEqual({ code: 'conflict', message: 'taken' });
  });

  it('when plain data is rebuilt, then status, slug and title come from the catalogue by code, whatever the data claimed', () => {
    const err = errorFromData({
      code: 'keystore_too_large',
      message: 'too big',
      details: { limit: 1 },
      status: 200,
      slug: 'fine',
      title: 'Fine',
    });
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({
      code: 'keystore_too_large',
      status: 413,
      slug: 'keystore-too-large',
      title: 'Keystore Too Large',
      message: 'too big',
      details: { limit: 1 },
    });
  });

  it('when the data is not ours or its code is not catalogued, then it is an internal error', () => {
    for (const data of [
      undefined,
      null,
      'boom',
      { message: 'no code' },
      { code: 'made_up', message: 'x' },
      { code: 'toString', message: 'x' },
    ]) {
      expect(errorFromData(data)).toMatchObject({ code: 'internal', status: 500 });
    }
  });

  it('when a job fails, then its failedReason holds {code, message, details} and reads back as the same error', () => {
    const reason = encodeProblem(
      problemOf(
        problem('source_changed', 'the source changed', {
          details: { submitted: 'a', current: 'b' },
        }),
      ),
    );
    expect(JSON.parse(reason)).toEqual({
      code: 'source_changed',
      message: 'the source changed',
      details: { submitted: 'a', current: 'b' },
    });
    expect(decodeProblem(reason)).toMatchObject({
      code: 'source_changed',
      status: 409,
      slug: 'source-changed',
      details: { submitted: 'a', current: 'b' },
    });
  });

  it('when a job failed unexpectedly, then the stored message names the job and no cause; a storage outage keeps its message', () => {
    expect(problemOf(new Error('secret path /x'), 'cv-1')).toEqual({
      code: 'internal',
      message: 'the conversion failed unexpectedly; the worker log has the cause (job cv-1)',
    });
    expect(
      problemOf(
        problem('storage_unavailable', 'object storage unreachable during get', {
          details: { transient: true },
        }),
      ),
    ).toEqual({
      code: 'storage_unavailable',
      message: 'object storage unreachable during get',
      details: { transient: true },
    });
  });

  it('when a failedReason was written by BullMQ itself or by an older worker, then it still reads: BullMQ text as internal, the old shape by its code', () => {
    expect(decodeProblem('job stalled more than allowable limit')).toMatchObject({
      code: 'internal',
      message: 'the job failed: job stalled more than allowable limit',
    });
    expect(decodeProblem(undefined)).toMatchObject({ code: 'internal', message: 'the job failed' });
    const old = JSON.stringify({
      code: 'cms_malformed',
      message: 'not CMS',
      status: 400,
      slug: 'cms-malformed',
      title: 'Malformed CMS',
    });
    expect(decodeProblem(old)).toMatchObject({
      code: 'cms_malformed',
      message: 'not CMS',
      status: 400,
    });
  });
});

describe('the one RFC 7807 rendering', () => {
  it('when an exposed error renders, then type, title, status, detail, instance and its details members', () => {
    expect(
      problemDocument(problem('key_not_found', 'no key k1', { details: { kid: 'k1' } }), BASE, {
        instance: '/api/v3/crypto/encrypt',
      }),
    ).toEqual({
      type: `${BASE}/problems/key-not-found`,
      title: 'Key Not Found',
      status: 404,
      detail: 'no key k1',
      instance: '/api/v3/crypto/encrypt',
      kid: 'k1',
    });
  });

  it('when a 5xx renders, then neither its message nor its details leave, and an item of a larger answer has no instance', () => {
    const doc = problemDocument(
      problem('internal', 'secret internals', { details: { path: '/secret' } }),
      BASE,
    );
    expect(doc).toEqual({
      type: `${BASE}/problems/internal-error`,
      title: 'Internal Server Error',
      status: 500,
      detail: 'an unexpected error occurred; the request id identifies it in the logs',
    });
  });

  it('when a job problem renders, then the message the worker made safe is shown whatever the status, in the same shape as an HTTP problem', () => {
    const doc = problemDocument(
      decodeProblem(
        encodeProblem(
          problemOf(
            problem('storage_unavailable', 'object storage unreachable during get', {
              details: { transient: true },
            }),
          ),
        ),
      ),
      BASE,
      { safeMessage: true },
    );
    expect(doc).toEqual({
      type: `${BASE}/problems/storage-unavailable`,
      title: 'Storage Unavailable',
      status: 503,
      detail: 'object storage unreachable during get',
      transient: true,
    });
  });
});
