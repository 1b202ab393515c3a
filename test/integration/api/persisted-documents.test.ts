/**
 * Trusted documents (PERSISTED_DOCUMENTS, the manifest codegen's client preset writes): which
 * requests run in each mode, by id in a POST body, a GET query string or Apollo's
 * persisted-query extension; unknown ids and free-form documents refused with a typed error and
 * nothing changed; a manifest that does not fit the schema stops the start. Apollo's automatic
 * persisted queries are off.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PersistedDocuments } from '../../../src/graphql/persisted-documents';
import { buildFeedSchema } from '../../../src/graphql/schema';
import { ConfigError, loadConfig } from '../../../src/kernel/config';
import { startTestApp, TestApp } from '../../support/harness';

const MANIFEST = join(__dirname, '..', '..', '..', 'examples', 'generated', 'persisted-documents.json');
const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, string>;
/** The manifest's id of the operation named `name`, as the client preset writes it ("sha256:<hex>"). */
const idOf = (name: string) =>
  Object.entries(manifest).find(([, text]) => text.includes(` ${name}(`) || text.includes(` ${name} `))![0];

let allow: TestApp;
let only: TestApp;
let off: TestApp;
beforeAll(async () => {
  allow = await startTestApp('trusted_allow', {
    env: { PERSISTED_DOCUMENTS: 'allow', PERSISTED_DOCUMENTS_MANIFEST: MANIFEST },
  });
  only = await startTestApp('trusted_only', {
    env: { PERSISTED_DOCUMENTS: 'only', PERSISTED_DOCUMENTS_MANIFEST: MANIFEST },
  });
  off = await startTestApp('trusted_off');
});
afterAll(async () => {
  await allow.close();
  await only.close();
  await off.close();
});

async function post(app: TestApp, body: Record<string, unknown>) {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data?: any;
      errors?: Array<{ message: string; extensions: Record<string, unknown> }>;
    },
  };
}

const SEARCH = { search: 'nobody-here' };
const FREE_FORM = 'query($search: String!) { users(search: $search) { edges { node { id } } } }';

it('runs a known id (bare, "sha256:" or in the persisted-query extension) in allow and only, and a document sent whole in allow', async () => {
  const id = idOf('SearchUsers');
  const hex = id.replace(/^sha256:/, '');
  for (const app of [allow, only]) {
    for (const body of [
      { documentId: id, variables: SEARCH },
      { documentId: hex, variables: SEARCH },
      { extensions: { persistedQuery: { version: 1, sha256Hash: hex } }, variables: SEARCH },
    ]) {
      const answer = await post(app, body);
      expect(answer).toEqual({
        status: 200,
        body: {
          data: {
            __typename: 'Query',
            users: { __typename: 'UserConnection', edges: [], pageInfo: expect.anything() },
          },
        },
      });
    }
  }
  expect(await post(allow, { query: FREE_FORM, variables: SEARCH })).toEqual({
    status: 200,
    body: { data: { users: { edges: [] } } },
  });
  // A link that sends the text after an unknown id (allow): the text runs.
  const fallback = await post(allow, {
    query: FREE_FORM,
    variables: SEARCH,
    extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } },
  });
  expect(fallback.body).toEqual({ data: { users: { edges: [] } } });
});

it('refuses an unknown id with PERSISTED_QUERY_NOT_FOUND naming the argument, and a document sent whole in only mode, changing nothing', async () => {
  for (const app of [allow, only]) {
    const unknown = await post(app, { documentId: 'sha256:0123', variables: SEARCH });
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toBeUndefined();
    expect(unknown.body.errors).toEqual([
      {
        message: expect.stringMatching(/^no trusted document has the id "sha256:0123" \(documentId\)/),
        extensions: { code: 'PERSISTED_QUERY_NOT_FOUND', field: 'documentId' },
      },
    ]);
    const viaExtension = await post(app, { extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } });
    expect(viaExtension.body.errors![0].extensions).toEqual({
      code: 'PERSISTED_QUERY_NOT_FOUND',
      field: 'extensions.persistedQuery.sha256Hash',
    });
    expect((await post(app, { documentId: 42 })).body.errors![0].extensions.field).toBe('documentId');
  }
  const signUp = 'mutation { signUp(nickName: "free-form", password: "password-123") { token } }';
  const whole = await post(only, { query: signUp });
  expect(whole.status).toBe(400);
  expect(whole.body.errors![0].extensions).toEqual({ code: 'PERSISTED_QUERY_ID_REQUIRED' });
  expect(await post(only, { query: signUp, documentId: 'sha256:0123' })).toMatchObject({
    body: { errors: [{ extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] },
  });
  expect(await only.query("SELECT id FROM tb_user WHERE nick_key = 'free-form'")).toEqual([]);
});

it('takes the id in a GET query string', async () => {
  const search = new URLSearchParams({ documentId: idOf('SearchUsers'), variables: JSON.stringify(SEARCH) });
  const response = await fetch(`${only.url}?${search.toString()}`, { headers: { 'apollo-require-preflight': 'true' } });
  expect(response.status).toBe(200);
  expect(((await response.json()) as { data: { users: { edges: unknown[] } } }).data.users.edges).toEqual([]);
  const freeForm = await fetch(`${only.url}?query=${encodeURIComponent('{ __typename }')}`, {
    headers: { 'apollo-require-preflight': 'true' },
  });
  expect(freeForm.status).toBe(400);
});

it('answers PERSISTED_QUERY_NOT_SUPPORTED to an automatic persisted query when off, and runs documents as before', async () => {
  const apq = await post(off, { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } });
  expect(apq.body.errors![0].extensions.code).toBe('PERSISTED_QUERY_NOT_SUPPORTED');
  expect((await post(off, { query: FREE_FORM, variables: SEARCH })).body).toEqual({ data: { users: { edges: [] } } });
});

it('refuses to start on a manifest that cannot be read or does not fit the schema, naming the setting', async () => {
  const file = join(tmpdir(), `api-manifest-${process.pid}.json`);
  // What startApp does first, before it opens or starts anything.
  const startWith = async (content: string) => {
    writeFileSync(file, content);
    try {
      PersistedDocuments.load(
        loadConfig({ ...only.env, PERSISTED_DOCUMENTS_MANIFEST: file }).persistedDocuments,
        buildFeedSchema(),
      );
      return 'started';
    } catch (error) {
      return error instanceof ConfigError ? error.message : `unexpected: ${String(error)}`;
    }
  };
  expect(await startWith('{"sha256:1": "query { nope }"}')).toMatch(
    /^PERSISTED_DOCUMENTS_MANIFEST \(.*\) holds a document that does not fit the schema \(id "sha256:1"\): Cannot query field "nope" on type "Query"/,
  );
  expect(await startWith('[]')).toMatch(/must be a JSON object of id: document/);
  expect(await startWith('{')).toMatch(/cannot be read as JSON/);
});
