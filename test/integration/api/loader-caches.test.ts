/**
 * Loader caches after a mutation: one document that changes a follow or a like and reads it back
 * answers each field with its own state.
 */
import { ok, publish, signUp, startTestApp, TestApp } from '../../support/harness';

describe('loader caches after a mutation', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('stale_loaders');
  });
  afterAll(() => app.close());

  it('follow then unfollow in one document answer each its own state', async () => {
    const reader = await signUp(app, 'reader');
    const author = await signUp(app, 'author');
    const data = ok(
      await app.gql(
        `mutation($u: ID!) {
          on: follow(userId: $u) { isFollowedByViewer followerCount }
          off: follow(userId: $u, follow: false) { isFollowedByViewer followerCount }
          again: follow(userId: $u) { isFollowedByViewer followerCount }
        }`,
        { u: author.id },
        reader.token,
      ),
    );
    expect(data).toEqual({
      on: { isFollowedByViewer: true, followerCount: 1 },
      off: { isFollowedByViewer: false, followerCount: 0 },
      again: { isFollowedByViewer: true, followerCount: 1 },
    });
  });

  it('like then unlike in one document answer each its own state', async () => {
    const author = await signUp(app, 'writer');
    const fan = await signUp(app, 'fan');
    const blog = await publish(app, author, 'liked');
    const data = ok(
      await app.gql(
        `mutation($b: ID!) {
          on: likeBlog(blogId: $b) { isLiked likeCount }
          off: likeBlog(blogId: $b, liked: false) { isLiked likeCount }
          again: likeBlog(blogId: $b) { isLiked likeCount author { nickName } }
        }`,
        { b: blog },
        fan.token,
      ),
    );
    expect(data).toEqual({
      on: { isLiked: true, likeCount: 1 },
      off: { isLiked: false, likeCount: 0 },
      again: { isLiked: true, likeCount: 1, author: { nickName: 'writer' } },
    });
  });
});
