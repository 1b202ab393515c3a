export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** ISO-8601 date-time in UTC with milliseconds, e.g. 2026-11-30T09:52:42.123Z */
  DateTime: { input: string; output: string; }
};

/** A signed-in session */
export type AuthPayload = {
  __typename?: 'AuthPayload';
  /** send as the header  Authorization: Bearer <token> */
  token: Scalars['String']['output'];
  user: User;
};

/** A post: a title, a text and up to 9 images */
export type Blog = Node & {
  __typename?: 'Blog';
  author: User;
  content: Scalars['String']['output'];
  createdAt: Scalars['DateTime']['output'];
  id: Scalars['ID']['output'];
  images: Array<Scalars['String']['output']>;
  /** false for an anonymous viewer */
  isLiked: Scalars['Boolean']['output'];
  /** How many users like this blog (exact) */
  likeCount: Scalars['Int']['output'];
  /** Users who like this blog, earliest like first (the seed's like ranking shows the first 5) */
  likers: UserConnection;
  title: Scalars['String']['output'];
};


/** A post: a title, a text and up to 9 images */
export type BlogLikersArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};

/** A page of blogs, newest first (ties: larger blog id first) */
export type BlogConnection = {
  __typename?: 'BlogConnection';
  edges: Array<BlogEdge>;
  pageInfo: PageInfo;
};

export type BlogEdge = {
  __typename?: 'BlogEdge';
  /** Pass as `after` to continue after this blog */
  cursor: Scalars['String']['output'];
  node: Blog;
};

export type Mutation = {
  __typename?: 'Mutation';
  /** Only the author may delete; the blog leaves every feed. Returns the deleted blog's id. */
  deleteBlog: Scalars['ID']['output'];
  /** Idempotent: sets whether the viewer follows userId; returns that user. */
  follow: User;
  /** Idempotent: sets whether the viewer likes blogId; returns the blog. */
  likeBlog: Blog;
  /** Signs in; the token expires (JWT_EXPIRES_IN_SECONDS) */
  login: AuthPayload;
  /** Publishes a blog; it reaches the followers' feeds right after */
  publishBlog: Blog;
  /** Creates an account and signs in. nickName 1..32 characters, password 8..256 */
  signUp: AuthPayload;
};


export type MutationDeleteBlogArgs = {
  blogId: Scalars['ID']['input'];
};


export type MutationFollowArgs = {
  follow?: Scalars['Boolean']['input'];
  userId: Scalars['ID']['input'];
};


export type MutationLikeBlogArgs = {
  blogId: Scalars['ID']['input'];
  liked?: Scalars['Boolean']['input'];
};


export type MutationLoginArgs = {
  nickName: Scalars['String']['input'];
  password: Scalars['String']['input'];
};


export type MutationPublishBlogArgs = {
  input: PublishBlogInput;
};


export type MutationSignUpArgs = {
  nickName: Scalars['String']['input'];
  password: Scalars['String']['input'];
};

/** An object with a global id, refetchable with Query.node */
export type Node = {
  /** Opaque global id */
  id: Scalars['ID']['output'];
};

/** Relay page information; pagination here is forward only (first/after) */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** Pass as `after` to get the next page */
  endCursor?: Maybe<Scalars['String']['output']>;
  hasNextPage: Scalars['Boolean']['output'];
  /** Always false: connections page forward only */
  hasPreviousPage: Scalars['Boolean']['output'];
  startCursor?: Maybe<Scalars['String']['output']>;
};

/** A new blog. Limits: title 1..255 characters, content 1..10000, at most 9 images of 1..512 characters */
export type PublishBlogInput = {
  content: Scalars['String']['input'];
  images?: InputMaybe<Array<Scalars['String']['input']>>;
  title: Scalars['String']['input'];
};

export type Query = {
  __typename?: 'Query';
  /** null when no live blog has this id */
  blog?: Maybe<Blog>;
  /** Blogs of the users the viewer follows, newest first (ties: larger blog id first). Requires a viewer. */
  followFeed: BlogConnection;
  /** Any object by its global id; null when it does not exist */
  node?: Maybe<Node>;
  /** null when no user has this id */
  user?: Maybe<User>;
  /** null when anonymous */
  viewer?: Maybe<User>;
};


export type QueryBlogArgs = {
  id: Scalars['ID']['input'];
};


export type QueryFollowFeedArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryNodeArgs = {
  id: Scalars['ID']['input'];
};


export type QueryUserArgs = {
  id: Scalars['ID']['input'];
};

export type Subscription = {
  __typename?: 'Subscription';
  /** Each blog as it enters the viewer's follow feed, newest first in arrival order, over graphql-ws at the same /graphql address. Requires a viewer: the connection_init payload carries { "authorization": "Bearer <token>" }. */
  followFeedAdded: BlogEdge;
};

/** A person who publishes blogs and follows others */
export type User = Node & {
  __typename?: 'User';
  /** the user's own blogs, newest first */
  blogs: BlogConnection;
  /** Users whom both the viewer and this user follow (the seed's common follows); empty when anonymous */
  commonFollows: UserConnection;
  /** How many users follow this user */
  followerCount: Scalars['Int']['output'];
  /** Users who follow this user, most recent follow first */
  followers: UserConnection;
  /** Users this user follows, most recent follow first */
  following: UserConnection;
  /** How many users this user follows */
  followingCount: Scalars['Int']['output'];
  icon?: Maybe<Scalars['String']['output']>;
  id: Scalars['ID']['output'];
  /** false for an anonymous viewer */
  isFollowedByViewer: Scalars['Boolean']['output'];
  nickName: Scalars['String']['output'];
};


/** A person who publishes blogs and follows others */
export type UserBlogsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


/** A person who publishes blogs and follows others */
export type UserCommonFollowsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


/** A person who publishes blogs and follows others */
export type UserFollowersArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


/** A person who publishes blogs and follows others */
export type UserFollowingArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};

/** A page of users */
export type UserConnection = {
  __typename?: 'UserConnection';
  edges: Array<UserEdge>;
  pageInfo: PageInfo;
};

export type UserEdge = {
  __typename?: 'UserEdge';
  /** Pass as `after` to continue after this user */
  cursor: Scalars['String']['output'];
  node: User;
};
