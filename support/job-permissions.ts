/** The permissions of a tenant that runs migration jobs end to end: the jobs tests and the job benches. */
export const JOB_PERMISSIONS = [
  'migration.uploads.write',
  'migration.jobs.create',
  'migration.jobs.read',
  'migration.jobs.cancel',
  'migration.jobs.result.read',
  'migration.analyze',
  'migration.convert',
  'crypto.decrypt',
];
