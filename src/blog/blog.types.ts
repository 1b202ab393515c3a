/** The Blog object type, its connection, and the publish input. */
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { PageInfo } from '../kernel/pagination/connection';
import { toGlobalId } from '../kernel/global-id';
import { Node } from '../kernel/node';
import { DateTimeScalar } from '../kernel/scalars';

@ObjectType({ simpleResolvers: true, implements: Node, description: 'A post: a title, a text and up to 9 images' })
export class Blog implements Node {
  @Field(() => ID, { description: 'Opaque global id' })
  id!: string;

  @Field(() => String, { description: 'The title, 1..255 characters' })
  title!: string;

  @Field(() => String, { description: 'The text, 1..10000 characters; newlines and tabs kept' })
  content!: string;

  @Field(() => [String], { description: 'Image URLs, at most 9, in the order the author gave them' })
  images!: string[];

  @Field(() => Int, { description: 'How many users like this blog, exact' })
  likeCount!: number;

  @Field(() => DateTimeScalar, { description: 'When it was published; feeds are ordered by it' })
  createdAt!: Date;

  @Field(() => DateTimeScalar, { nullable: true, description: 'When the author last edited it; null if never' })
  editedAt!: Date | null;

  /** The database id (not exposed; `id` is the global id). */
  dbId!: number;

  /** The author's database id; Blog.author resolves it through the user loader. */
  authorId!: number;

  /** Whether the blog was fanned out into inboxes (false: a big author's, merged at read time). */
  pushed!: boolean;

  /** The feed score: created_at in epoch ms, from the database row. */
  get score(): number {
    return this.createdAt.getTime();
  }

  static fromRow(row: BlogRow): Blog {
    const blog = new Blog();
    blog.dbId = Number(row.id);
    blog.id = toGlobalId('Blog', blog.dbId);
    blog.authorId = Number(row.user_id);
    blog.pushed = Boolean(row.pushed);
    blog.title = row.title;
    blog.content = row.content;
    blog.images = JSON.parse(row.images) as string[];
    blog.likeCount = Number(row.liked);
    blog.createdAt = row.created_at;
    blog.editedAt = row.edited_at ?? null;
    return blog;
  }
}

/** A tb_blog row as raw SQL returns it (BIGINT as string). */
export interface BlogRow {
  id: string | number;
  user_id: string | number;
  title: string;
  content: string;
  images: string;
  liked: number;
  created_at: Date;
  pushed: number | boolean;
  /** When the author last edited it (updateBlog); NULL if never. Absent from rows a new blog is inserted from. */
  edited_at?: Date | null;
}

/** The row of a blog published with an idempotency key, deleted or not: what a retry is compared with. */
export interface KeyedBlogRow extends BlogRow {
  deleted_at: Date | null;
}

@ObjectType({ simpleResolvers: true, description: 'A blog and its position in a connection' })
export class BlogEdge {
  @Field(() => String, { description: 'Pass as `after` (or `before`) to continue from this blog' })
  cursor!: string;

  @Field(() => Blog, { description: 'The blog' })
  node!: Blog;
}

@ObjectType({ simpleResolvers: true, description: 'A page of blogs, newest first (ties: larger blog id first)' })
export class BlogConnection {
  @Field(() => [BlogEdge], { description: 'The blogs of this page, newest first' })
  edges!: BlogEdge[];

  @Field(() => PageInfo, { description: 'Whether more pages follow, and the cursors to get them' })
  pageInfo!: PageInfo;
}

@InputType({
  description: "A change to one's own blog; omitted fields stay as they are. The limits of a new blog apply",
})
export class UpdateBlogInput {
  @Field(() => ID, { description: "Global id of one of the viewer's blogs" })
  blogId!: string;

  @Field(() => String, {
    nullable: true,
    description: 'The new title: 1..255 characters, not blank, no control characters but newline and tab',
  })
  title?: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'The new text: 1..10000 characters, not blank, no control characters but newline and tab',
  })
  content?: string | null;

  @Field(() => [String], {
    nullable: true,
    description:
      'Image URLs (http or https), at most 9, each 1..512 characters; they replace the old ones ([] removes them all)',
  })
  images?: string[] | null;
}

@InputType({
  description: 'A new blog. Limits: title 1..255 characters, content 1..10000, at most 9 images of 1..512 characters',
})
export class PublishBlogInput {
  @Field(() => String, { description: '1..255 characters, not blank, no control characters but newline and tab' })
  title!: string;

  @Field(() => String, { description: '1..10000 characters, not blank, no control characters but newline and tab' })
  content!: string;

  @Field(() => [String], {
    nullable: true,
    description: 'Image URLs (http or https), at most 9, each 1..512 characters; none when omitted',
  })
  images?: string[] | null;

  @Field(() => String, {
    nullable: true,
    description:
      'Optional, chosen by the client to make a retry safe: 1..64 characters of A-Z a-z 0-9 _ - (a UUID fits). A publishBlog with ' +
      'a key the viewer used before creates nothing and returns the blog the first one created (a retry after a timeout or ' +
      'a lost answer), or BAD_USER_INPUT if title, content or images differ. Keys are per author and remembered as long as ' +
      'the blog exists (a deleted blog keeps its key: its retry is NOT_FOUND).',
  })
  idempotencyKey?: string | null;
}
