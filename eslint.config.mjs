// ESLint flat config: typescript-eslint's type-aware rules over every hand-written TypeScript
// folder. Formatting is Prettier's job (eslint-config-prettier, last, turns off the rules that
// would fight it); `npm run lint` runs both.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Build output and generated code (examples/generated is written by `npm run codegen`).
    ignores: ['dist/**', 'node_modules/**', 'examples/generated/**', 'web/**', 'coverage/**', 'data/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        // tsconfig.json covers src, test, bench, scripts, migrations and examples.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A dropped promise is a lost error or an unfinished write: these two are the reason ESLint is here.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // `_`-prefixed names are deliberately unused (destructuring a field away, a required parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      // Off: `async` without `await` is how the in-memory inbox, Apollo plugin hooks and test fakes meet
      // promise-returning interfaces, and it turns a throw into a rejection; dropping it would change that.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Off in tests and benchmarks: they read GraphQL responses as parsed JSON (`any`); typing every
    // response shape would be a broad rewrite of test code for no gain in what the tests check.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain JavaScript (scripts/*.mjs, jest.config.js, this file): no type information to check against.
    files: ['**/*.mjs', '**/*.js', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
    // CommonJS files load their modules with require().
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The service logs through pino (structured JSON lines, LOG_LEVEL); a console line bypasses both.
    files: ['src/**/*.ts'],
    rules: {
      'no-console': 'error',
      // A function of many positional arguments is read wrong at its call sites: five at most, and
      // a constructor's dependencies (more than three) come in one options object.
      '@typescript-eslint/max-params': ['error', { max: 5 }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MethodDefinition[kind='constructor'] > FunctionExpression[params.length>3]",
          message: 'A constructor of more than three dependencies takes one options object (see FeedServiceDeps).',
        },
        {
          // `x as unknown as T` tells the compiler to stop checking; type the value or narrow it instead.
          selector: "TSAsExpression > TSAsExpression.expression[typeAnnotation.type='TSUnknownKeyword']",
          message: "No 'as unknown as' in src: give the value its real type, or narrow it with a check.",
        },
      ],
    },
  },
  prettier,
);
