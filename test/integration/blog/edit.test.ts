/**
 * Editing through a real client (Apollo Client 4 over HTTP, its normalized cache): updateBlog
 * (the author only, editedAt, the rules of a new blog, http(s) images), updateProfile (nickName
 * under signUp's rules and uniqueness key, the URL scalar for icon), and that a follower's feed
 * page shows the edit at once (never the cached copy from before). Every refusal is a typed error
 * naming the argument, and changes nothing. Runs in the embedded pass too.
 */
import { ApolloClient, CombinedGraphQLErrors, gql, HttpLink, InMemoryCache, type DocumentNode } from '@apollo/client';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { follow, signUp, startTestApp, TestApp, TestUser } from '../../support/harness';

let app: TestApp;
let author: TestUser;
let other: TestUser;
let reader: TestUser;

beforeAll(async () => {
  app = await startTestApp('edit', { env: { FANOUT_WORKERS: '1' } });
  [author, other, reader] = [await signUp(app, 'author'), await signUp(app, 'other'), await signUp(app, 'reader')];
  await follow(app, reader, author);
});
afterAll(() => app.close());

function client(token?: string): ApolloClient {
  return new ApolloClient({
    cache: new InMemoryCache(),
    link: new HttpLink({ uri: app.url, headers: token ? { authorization: `Bearer ${token}` } : {} }),
    defaultOptions: { query: { fetchPolicy: 'network-only' } },
  });
}

interface Outcome {
  data: any;
  errors: Array<{ message: string; extensions?: Record<string, unknown> }>;
}

/** A mutation through Apollo Client; its data and GraphQL errors (errorPolicy all). */
async function mutate(
  token: string | undefined,
  mutation: DocumentNode,
  variables: Record<string, unknown>,
): Promise<Outcome> {
  try {
    const result = await client(token).mutate({ mutation, variables, errorPolicy: 'all' });
    const errors = CombinedGraphQLErrors.is(result.error) ? [...result.error.errors] : [];
    if (result.error && errors.length === 0) throw new Error(`the request failed: ${result.error.message}`);
    return { data: result.data, errors };
  } catch (error) {
    // A variable the server refuses before running (the URL scalar) comes back as a failed request.
    if (CombinedGraphQLErrors.is(error)) return { data: null, errors: [...error.errors] as Outcome['errors'] };
    throw error;
  }
}

async function query(
  token: string | undefined,
  document: DocumentNode,
  variables: Record<string, unknown> = {},
): Promise<any> {
  const result = await client(token).query({ query: document, variables });
  return result.data;
}

const PUBLISH = gql`
  mutation Publish($input: PublishBlogInput!) {
    publishBlog(input: $input) {
      id
      editedAt
    }
  }
`;
const UPDATE_BLOG = gql`
  mutation UpdateBlog($input: UpdateBlogInput!) {
    updateBlog(input: $input) {
      id
      title
      content
      images
      createdAt
      editedAt
    }
  }
`;
const BLOG = gql`
  query Blog($id: ID!) {
    blog(id: $id) {
      id
      title
      content
      images
      createdAt
      editedAt
    }
  }
`;
const UPDATE_PROFILE = gql`
  mutation UpdateProfile($input: UpdateProfileInput!) {
    updateProfile(input: $input) {
      id
      nickName
      icon
    }
  }
`;
const USER = gql`
  query User($id: ID!) {
    user(id: $id) {
      id
      nickName
      icon
      followerCount
    }
  }
`;
const FEED = gql`
  query Feed {
    followFeed(first: 10) {
      edges {
        node {
          id
          title
          content
          images
          editedAt
          author {
            id
            nickName
            icon
            followerCount
          }
        }
      }
    }
  }
`;

async function publishBlog(title: string, images: string[] = []): Promise<string> {
  const { data, errors } = await mutate(author.token, PUBLISH, { input: { title, content: `${title} text`, images } });
  expect(errors).toEqual([]);
  expect(data.publishBlog.editedAt).toBeNull();
  await app.services.fanout?.idle();
  return data.publishBlog.id as string;
}

async function rowOf(blogId: string): Promise<Record<string, unknown>> {
  const [row] = await app.query('SELECT title, content, images, edited_at FROM tb_blog WHERE id = ?', [
    fromGlobalId(blogId).id,
  ]);
  return row;
}

async function userRowOf(user: TestUser): Promise<Record<string, unknown>> {
  const [row] = await app.query('SELECT nick_name, nick_key, icon FROM tb_user WHERE id = ?', [
    fromGlobalId(user.id).id,
  ]);
  return row;
}

function expectRefused(outcome: Outcome, code: string, field?: string | RegExp): void {
  expect(outcome.errors).toHaveLength(1);
  expect(outcome.errors[0].extensions?.code).toBe(code);
  if (typeof field === 'string') expect(outcome.errors[0].extensions?.field).toBe(field);
  if (field instanceof RegExp) expect(outcome.errors[0].message).toMatch(field);
}

describe('updateBlog', () => {
  it('changes the given fields only, sets editedAt, and the follower sees the edit on the next page', async () => {
    const id = await publishBlog('first title', ['https://img.example/1.png']);
    // The follower's page has the blog before the edit (and the cache holds it now).
    const before = await query(reader.token, FEED);
    expect(before.followFeed.edges.map((edge: any) => edge.node.title)).toContain('first title');

    const { data, errors } = await mutate(author.token, UPDATE_BLOG, { input: { blogId: id, title: 'second title' } });
    expect(errors).toEqual([]);
    const edited = data.updateBlog;
    expect(edited).toMatchObject({
      id,
      title: 'second title',
      content: 'first title text',
      images: ['https://img.example/1.png'],
    });
    expect(Date.parse(edited.editedAt)).toBeGreaterThanOrEqual(Date.parse(edited.createdAt));
    expect((await query(undefined, BLOG, { id })).blog).toEqual(edited);

    const page = await query(reader.token, FEED);
    const node = page.followFeed.edges.map((edge: any) => edge.node).find((blog: any) => blog.id === id);
    expect(node).toMatchObject({ title: 'second title', editedAt: edited.editedAt });

    const images = ['http://img.example/a.png', 'https://img.example/b.png'];
    const again = await mutate(author.token, UPDATE_BLOG, { input: { blogId: id, content: 'new text', images } });
    expect(again.errors).toEqual([]);
    expect(again.data.updateBlog).toMatchObject({ title: 'second title', content: 'new text', images });
    const latest = (await query(reader.token, FEED)).followFeed.edges
      .map((edge: any) => edge.node)
      .find((blog: any) => blog.id === id);
    expect(latest).toMatchObject({ title: 'second title', content: 'new text', images });
  });

  it("refuses another user's blog with FORBIDDEN, and changes nothing", async () => {
    const id = await publishBlog('mine');
    const before = await rowOf(id);
    expectRefused(await mutate(other.token, UPDATE_BLOG, { input: { blogId: id, title: 'stolen' } }), 'FORBIDDEN');
    expect(await rowOf(id)).toEqual(before);
    expect(before.edited_at).toBeNull();
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a javascript: image', { images: ['https://img.example/ok.png', 'javascript:alert(1)'] }, 'images[1]'],
    ['a data: image', { images: ['data:text/html,hi'] }, 'images[0]'],
    ['an image that is no URL', { images: ['img.png'] }, 'images[0]'],
    ['10 images', { images: Array.from({ length: 10 }, (_, i) => `https://img.example/${i}`) }, 'images'],
    ['an empty title', { title: '' }, 'title'],
    ['a blank content', { content: '  \n' }, 'content'],
    ['a title with a control character', { title: 'a \u0007 bell' }, 'title'],
    ['no field to change', {}, 'input'],
  ])('refuses %s with BAD_USER_INPUT naming the field, and changes nothing', async (_label, change, field) => {
    const id = await publishBlog('unchanged');
    const before = await rowOf(id);
    expectRefused(
      await mutate(author.token, UPDATE_BLOG, { input: { blogId: id, ...change } }),
      'BAD_USER_INPUT',
      field,
    );
    expect(await rowOf(id)).toEqual(before);
  });

  it('refuses a deleted blog (NOT_FOUND), an id of another type (BAD_USER_INPUT on blogId) and an anonymous caller', async () => {
    const id = await publishBlog('to delete');
    expect(
      (await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: id }, author.token)).errors,
    ).toBeUndefined();
    expectRefused(await mutate(author.token, UPDATE_BLOG, { input: { blogId: id, title: 'back' } }), 'NOT_FOUND');
    expectRefused(
      await mutate(author.token, UPDATE_BLOG, { input: { blogId: author.id, title: 'x' } }),
      'BAD_USER_INPUT',
      'blogId',
    );
    expectRefused(await mutate(undefined, UPDATE_BLOG, { input: { blogId: id, title: 'x' } }), 'UNAUTHENTICATED');
  });

  it('serves old rows whose images are not URLs as they are', async () => {
    await app.db.write(
      'INSERT INTO tb_blog (user_id, title, content, images, liked, created_at, pushed) VALUES (?, ?, ?, ?, 0, ?, 1)',
      [
        fromGlobalId(author.id).id,
        'old',
        'from before the URL rule',
        JSON.stringify(['img/1.png', 'javascript:alert(1)']),
        new Date(),
      ],
    );
    const [{ id }] = await app.query<{ id: string }>("SELECT id FROM tb_blog WHERE title = 'old'");
    const blog = (await query(undefined, BLOG, { id: Buffer.from(`Blog:${id}`).toString('base64') })).blog;
    expect(blog).toMatchObject({ title: 'old', images: ['img/1.png', 'javascript:alert(1)'], editedAt: null });
  });
});

describe('updateProfile', () => {
  it('renames the viewer and sets the icon; the follower sees both on the next page, and logs in under the new name', async () => {
    await publishBlog('by the author');
    expect((await query(reader.token, FEED)).followFeed.edges[0].node.author.nickName).toBe('author');

    const icon = 'https://img.example/face.png';
    const { data, errors } = await mutate(author.token, UPDATE_PROFILE, { input: { nickName: 'Writer', icon } });
    expect(errors).toEqual([]);
    expect(data.updateProfile).toEqual({ __typename: 'User', id: author.id, nickName: 'Writer', icon });
    expect(await userRowOf(author)).toEqual({ nick_name: 'Writer', nick_key: 'writer', icon });

    const shown = (await query(reader.token, FEED)).followFeed.edges[0].node.author;
    expect(shown).toEqual({ __typename: 'User', id: author.id, nickName: 'Writer', icon, followerCount: 1 });
    expect((await query(undefined, USER, { id: author.id })).user).toMatchObject({
      nickName: 'Writer',
      icon,
      followerCount: 1,
    });
    const login = await app.gql('mutation { login(nickName: "WRITER", password: "password-123") { user { id } } }');
    expect(login.data?.login.user.id).toBe(author.id);

    // Only the icon: the nickName stays; null removes the icon.
    const iconOnly = await mutate(author.token, UPDATE_PROFILE, { input: { icon: 'http://img.example/2.png' } });
    expect(iconOnly.data.updateProfile).toMatchObject({ nickName: 'Writer', icon: 'http://img.example/2.png' });
    const removed = await mutate(author.token, UPDATE_PROFILE, { input: { icon: null } });
    expect(removed.data.updateProfile).toMatchObject({ nickName: 'Writer', icon: null });
    expect((await query(reader.token, FEED)).followFeed.edges[0].node.author).toMatchObject({
      nickName: 'Writer',
      icon: null,
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a nickName taken by another user, in another case and width', { nickName: 'ＯＴＨＥＲ' }, 'nickName'],
    ['an empty nickName', { nickName: '' }, 'nickName'],
    ['a nickName with white space at an end', { nickName: ' spaced' }, 'nickName'],
    ['a nickName of 33 characters', { nickName: 'n'.repeat(33) }, 'nickName'],
  ])('refuses %s with BAD_USER_INPUT naming it, and changes nothing', async (_label, input, field) => {
    const before = await userRowOf(reader);
    expectRefused(await mutate(reader.token, UPDATE_PROFILE, { input }), 'BAD_USER_INPUT', field);
    expect(await userRowOf(reader)).toEqual(before);
  });

  it.each([
    ['javascript:alert(1)', 'javascript:alert(1)', /input\.icon.*http or https.*javascript:/],
    ['data:image/png;base64,AAAA', 'data:image/png;base64,AAAA', /input\.icon.*http or https.*data:/],
    ['ftp://files.example/a.png', 'ftp://files.example/a.png', /input\.icon.*http or https.*ftp:/],
    ['/relative/a.png', '/relative/a.png', /input\.icon.*not an absolute URL/],
    ['of 519 characters', `https://img.example/${'a'.repeat(500)}`, /input\.icon.*1\.\.512 characters/],
  ])(
    'refuses the icon %s with BAD_USER_INPUT naming the argument, and changes nothing',
    async (_label, icon, message) => {
      const before = await userRowOf(reader);
      expectRefused(await mutate(reader.token, UPDATE_PROFILE, { input: { icon } }), 'BAD_USER_INPUT', message);
      expect(await userRowOf(reader)).toEqual(before);
    },
  );

  it('refuses a javascript: icon written in the document (not a variable) too', async () => {
    const response = await app.gql(
      'mutation { updateProfile(input: { icon: "javascript:alert(1)" }) { id } }',
      {},
      reader.token,
    );
    expect(response.errors?.[0].message).toMatch(/http or https.*javascript:/);
    expect(response.errors?.[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect((await userRowOf(reader)).icon).toBeNull();
  });
});
