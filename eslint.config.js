import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import { layersPlugin } from './scripts/guards/layers.ts';

export default tseslint.config(
  // bin/lib/api-types.ts is written by npm run api-types from the OpenAPI document.
  { ignores: ['node_modules/', 'data/', 'coverage/', 'bench/results/', 'bin/lib/api-types.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  {
    // Conventions 14: a request value never indexes a plain object ("constructor", "__proto__" and
    // "toString" find Object.prototype's members); look it up in a Map, or check Object.hasOwn first.
    files: ['api/**', 'shared/**', 'workers/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['req', 'form', 'body', 'query', 'input'].flatMap((name) => [
          {
            selector: `MemberExpression[computed=true] > MemberExpression.property[object.name='${name}']`,
            message: `${name}.* is request input: index a Map (or check Object.hasOwn first), never a plain object`,
          },
          {
            selector: `MemberExpression[computed=true] > MemberExpression.property > MemberExpression.object[object.name='${name}']`,
            message: `${name}.*.* is request input: index a Map (or check Object.hasOwn first), never a plain object`,
          },
        ]),
      ],
    },
  },
  {
    // The folders are the layers. The rules and their reasons are one table in
    // scripts/guards/layers.ts (workers and shared never import api; services never import
    // express, routes, middleware, http or rows; no route imports another; the CLI never imports api).
    files: ['**/*.ts', '**/*.js'],
    plugins: { keyward: layersPlugin },
    rules: { 'keyward/layers': 'error' },
  },
  {
    // The console (console/) is plain ES modules for the browser, loaded as they are (no build).
    files: ['console/**/*.js'],
    languageOptions: { globals: { ...globals.browser }, sourceType: 'module' },
  },
  {
    files: ['test/**', 'support/**', 'bench/**', 'bin/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
);
