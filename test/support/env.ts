/**
 * The environment every test file starts with: route rows answer 500 when an answer does not
 * fit its documented schema (ANSWER_CHECK=strict), so every test that calls a route also checks
 * the OpenAPI document against the live answer. Services started as child processes inherit it.
 */
process.env.ANSWER_CHECK ??= 'strict';
