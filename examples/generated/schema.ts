export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** An instant in UTC, ISO-8601 with milliseconds, e.g. 2026-11-30T09:52:42.123Z */
  DateTime: { input: string; output: string; }
  /** An absolute http or https URL */
  URL: { input: unknown; output: unknown; }
};

/** A signed-in session */
export type AuthPayload = {
  __typename?: 'AuthPayload';
  /** Send as the header  Authorization: Bearer <token> */
  token: Scalars['String']['output'];
  /** The signed-in user */
  user: User;
};

/** A post: a title, a text and up to 9 images */
export type Blog = Node & {
  __typename?: 'Blog';
  /** Who published it */
  author: User;
  /** The text, 1..10000 characters; newlines and tabs kept */
  content: Scalars['String']['output'];
  /** When it was published; feeds are ordered by it */
  createdAt: Scalars['DateTime']['output'];
  /** When the author last edited it; null if never */
  editedAt?: Maybe<Scalars['DateTime']['output']>;
  /** Opaque global id */
  id: Scalars['ID']['output'];
  /** Image URLs, at most 9, in the order the author gave them */
  images: Array<Scalars['String']['output']>;
  /** Whether the viewer likes this blog; false for an anonymous viewer */
  isLiked: Scalars['Boolean']['output'];
  /** How many users like this blog, exact */
  likeCount: Scalars['Int']['output'];
  /** Users who like this blog, earliest like first */
  likers: UserConnection;
  /** The title, 1..255 characters */
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
  /** The blogs of this page, newest first */
  edges: Array<BlogEdge>;
  /** Whether more pages follow, and the cursors to get them */
  pageInfo: PageInfo;
};

/** A blog and its position in a connection */
export type BlogEdge = {
  __typename?: 'BlogEdge';
  /** Pass as `after` (or `before`) to continue from this blog */
  cursor: Scalars['String']['output'];
  /** The blog */
  node: Blog;
};

/** Something that left the viewer's follow feed: deleted, unfollowed, muted or blocked */
export type FeedRemoval = {
  __typename?: 'FeedRemoval';
  /** Global id of the blog that left the feed */
  blogId: Scalars['ID']['output'];
};

/** The result of followUser: both users with their counts after the change, for a normalized cache */
export type FollowUserPayload = {
  __typename?: 'FollowUserPayload';
  /** The user followed or unfollowed (followerCount, isFollowedByViewer updated) */
  user: User;
  /** The viewer (followingCount updated) */
  viewer: User;
};

/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type Mutation = {
  __typename?: 'Mutation';
  /** Sets whether the viewer blocks userId: follows both ways end and neither sees the other (idempotent). While blocked, neither can follow the other (FORBIDDEN with extensions.reason "blocked"), and each is left out of the other's feed, followers, following, common follows, likers and search. Profiles and blogs stay readable by id. Unblocking restores no follow. Returns that user. */
  block: User;
  /** Only the author may delete; the blog leaves every feed. Returns the deleted blog's id. */
  deleteBlog: Scalars['ID']['output'];
  /**
   * Sets whether the viewer follows userId (idempotent); returns that user. A new follow past the most one user may follow (5,000 unless the operator set otherwise) is FORBIDDEN with extensions.limit "maxFollowing" and extensions.max.
   * @deprecated Use followUser: the same change, and its payload carries the viewer's updated followingCount too.
   */
  follow: User;
  /** Sets whether the viewer follows userId (idempotent); answers both users as they are after the change, so that a normalized cache updates the user's followerCount and the viewer's followingCount at once. A new follow past the most one user may follow (5,000 unless the operator set otherwise) is FORBIDDEN with extensions.limit "maxFollowing" and extensions.max. */
  followUser: FollowUserPayload;
  /** Sets whether the viewer likes blogId (idempotent); returns the blog */
  likeBlog: Blog;
  /** Signs in: a new session, whose token expires after a while (7 days unless the operator set otherwise) */
  login: AuthPayload;
  /** Ends this token's session: from then on the token is refused, in every API process. Always true. */
  logout: Scalars['Boolean']['output'];
  /** Ends every session of the viewer, this one included: every token issued to them so far is refused, in every API process. Always true. */
  logoutEverywhere: Scalars['Boolean']['output'];
  /** Sets whether the viewer mutes userId: their blogs leave the viewer's feed without unfollowing (idempotent). The viewer still follows them (counts and lists unchanged) and their blogs come back on unmute. Muting a user one does not follow is kept, and applies if one follows them later. Returns that user. */
  mute: User;
  /**
   * Publishes a blog; it reaches the followers' feeds right after. With input.idempotencyKey, a retry returns the blog instead of a second one.
   * @deprecated Use publishBlogEdge: the same blog with its feed cursor, ready to insert into a cached connection.
   */
  publishBlog: Blog;
  /** Publishes a blog and answers it as an edge: its cursor is the blog's place in followFeed and User.blogs, so a client can put it at the top of a cached connection (Relay's @prependEdge, Apollo Client's cache.modify). It reaches the followers' feeds right after. With input.idempotencyKey, a retry answers the blog of the first attempt instead of publishing a second one. */
  publishBlogEdge: BlogEdge;
  /** Creates an account and signs in */
  signUp: AuthPayload;
  /** Edits one's own blog: the fields given replace the old ones, and editedAt is set. FORBIDDEN for another user's blog (nothing changes). */
  updateBlog: Blog;
  /** Changes one's own nickName or icon */
  updateProfile: User;
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationBlockArgs = {
  blocked?: Scalars['Boolean']['input'];
  userId: Scalars['ID']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationDeleteBlogArgs = {
  blogId: Scalars['ID']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationFollowArgs = {
  follow?: Scalars['Boolean']['input'];
  userId: Scalars['ID']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationFollowUserArgs = {
  follow?: Scalars['Boolean']['input'];
  userId: Scalars['ID']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationLikeBlogArgs = {
  blogId: Scalars['ID']['input'];
  liked?: Scalars['Boolean']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationLoginArgs = {
  nickName: Scalars['String']['input'];
  password: Scalars['String']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationMuteArgs = {
  muted?: Scalars['Boolean']['input'];
  userId: Scalars['ID']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationPublishBlogArgs = {
  input: PublishBlogInput;
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationPublishBlogEdgeArgs = {
  input: PublishBlogInput;
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationSignUpArgs = {
  nickName: Scalars['String']['input'];
  password: Scalars['String']['input'];
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationUpdateBlogArgs = {
  input: UpdateBlogInput;
};


/** What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer. */
export type MutationUpdateProfileArgs = {
  input: UpdateProfileInput;
};

/** An object with a global id, refetchable with Query.node */
export type Node = {
  /** Opaque global id */
  id: Scalars['ID']['output'];
};

/** Where a page sits in its connection */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** Pass as `after` to get the next page */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** Whether more items come after this page; false on a page read with last/before (the client holds what lies below it) */
  hasNextPage: Scalars['Boolean']['output'];
  /** Whether more items come before this page: on a page read with last/before, whether newer items lie above it; false when paging forward with first/after */
  hasPreviousPage: Scalars['Boolean']['output'];
  /** The first edge's cursor (pass as `before` to get the page above, where a connection takes it); null for an empty page */
  startCursor?: Maybe<Scalars['String']['output']>;
};

/** A new blog. Limits: title 1..255 characters, content 1..10000, at most 9 images of 1..512 characters */
export type PublishBlogInput = {
  /** 1..10000 characters, not blank, no control characters but newline and tab */
  content: Scalars['String']['input'];
  /** Optional, chosen by the client to make a retry safe: 1..64 characters of A-Z a-z 0-9 _ - (a UUID fits). A publishBlog with a key the viewer used before creates nothing and returns the blog the first one created (a retry after a timeout or a lost answer), or BAD_USER_INPUT if title, content or images differ. Keys are per author and remembered as long as the blog exists (a deleted blog keeps its key: its retry is NOT_FOUND). */
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  /** Image URLs (http or https), at most 9, each 1..512 characters; none when omitted */
  images?: InputMaybe<Array<Scalars['String']['input']>>;
  /** 1..255 characters, not blank, no control characters but newline and tab */
  title: Scalars['String']['input'];
};

/** What a client can read: the viewer, users, blogs and the follow feed */
export type Query = {
  __typename?: 'Query';
  /** The blog with this global id; null when there is none or it was deleted */
  blog?: Maybe<Blog>;
  /** Blogs of the users the viewer follows, newest first (ties: larger blog id first). Forward with first/after; newer than a cursor with last/before (the blogs closest to before, still newest first; pageInfo.hasPreviousPage says whether more newer ones lie above). Requires a viewer. */
  followFeed: BlogConnection;
  /** How many blogs of the follow feed are newer than before, counted up to max (0..100): for a "new posts" banner. Requires a viewer. */
  followFeedNewCount: Scalars['Int']['output'];
  /** Any object by its global id; null when it does not exist */
  node?: Maybe<Node>;
  /** The user with this global id; null when there is none */
  user?: Maybe<User>;
  /** Users whose nickName starts with search (case- and width-insensitive), best match first */
  users: UserConnection;
  /** The signed-in user; null when anonymous */
  viewer?: Maybe<User>;
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryBlogArgs = {
  id: Scalars['ID']['input'];
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryFollowFeedArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  before?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  last?: InputMaybe<Scalars['Int']['input']>;
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryFollowFeedNewCountArgs = {
  before: Scalars['String']['input'];
  max?: InputMaybe<Scalars['Int']['input']>;
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryNodeArgs = {
  id: Scalars['ID']['input'];
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryUserArgs = {
  id: Scalars['ID']['input'];
};


/** What a client can read: the viewer, users, blogs and the follow feed */
export type QueryUsersArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  search: Scalars['String']['input'];
};

/** Live updates over graphql-ws at the same address as queries (ws:// or wss://); they need a viewer */
export type Subscription = {
  __typename?: 'Subscription';
  /** Each blog as it enters the viewer's follow feed, over graphql-ws at the same /graphql address. With after (the cursor of the newest blog the client holds), every blog newer than it comes first, oldest of them first so that the client prepends each edge as it comes, then live ones in arrival order, none missed or repeated. More than 100 newer blogs end the subscription with RESUME_GAP_TOO_LARGE: refetch the first page of followFeed and subscribe again with its newest cursor. The connection_init payload carries { "authorization": "Bearer <token>" }. */
  followFeedAdded: BlogEdge;
  /** Each blog that leaves the viewer's follow feed while the client watches it: deleted, or its author unfollowed (the author's newest blogs, one event each). Over graphql-ws, as followFeedAdded. */
  followFeedRemoved: FeedRemoval;
};


/** Live updates over graphql-ws at the same address as queries (ws:// or wss://); they need a viewer */
export type SubscriptionFollowFeedAddedArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
};

/** A change to one's own blog; omitted fields stay as they are. The limits of a new blog apply */
export type UpdateBlogInput = {
  /** Global id of one of the viewer's blogs */
  blogId: Scalars['ID']['input'];
  /** The new text: 1..10000 characters, not blank, no control characters but newline and tab */
  content?: InputMaybe<Scalars['String']['input']>;
  /** Image URLs (http or https), at most 9, each 1..512 characters; they replace the old ones ([] removes them all) */
  images?: InputMaybe<Array<Scalars['String']['input']>>;
  /** The new title: 1..255 characters, not blank, no control characters but newline and tab */
  title?: InputMaybe<Scalars['String']['input']>;
};

/** A change to one's own profile; omitted fields stay as they are */
export type UpdateProfileInput = {
  /** The new picture: an http or https URL of 1..512 characters; null removes it */
  icon?: InputMaybe<Scalars['URL']['input']>;
  /** The new nickName: 1..32 characters, unique without regard to case or width, no control characters, no white space at either end */
  nickName?: InputMaybe<Scalars['String']['input']>;
};

/** A person who publishes blogs and follows others */
export type User = Node & {
  __typename?: 'User';
  /** Users the viewer has blocked (only on the viewer itself; empty elsewhere), most recent block first */
  blocked: UserConnection;
  /** The user's own blogs, newest first (ties: larger blog id first) */
  blogs: BlogConnection;
  /** Users whom both the viewer and this user follow, most recent follow of this user first; empty for an anonymous viewer */
  commonFollows: UserConnection;
  /** How many users follow this user */
  followerCount: Scalars['Int']['output'];
  /** Users who follow this user, most recent follow first */
  followers: UserConnection;
  /** Users this user follows, most recent follow first */
  following: UserConnection;
  /** How many users this user follows */
  followingCount: Scalars['Int']['output'];
  /** Picture of the user, an http or https URL; null when none was set */
  icon?: Maybe<Scalars['String']['output']>;
  /** Opaque global id */
  id: Scalars['ID']['output'];
  /** Whether the viewer follows this user; false for an anonymous viewer */
  isFollowedByViewer: Scalars['Boolean']['output'];
  /** Users the viewer has muted (only on the viewer itself; empty elsewhere), most recent mute first */
  muted: UserConnection;
  /** The name the user chose, unique without regard to case or width; 1..32 characters */
  nickName: Scalars['String']['output'];
};


/** A person who publishes blogs and follows others */
export type UserBlockedArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
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


/** A person who publishes blogs and follows others */
export type UserMutedArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};

/** A page of users */
export type UserConnection = {
  __typename?: 'UserConnection';
  /** The users of this page, in the order of the connection */
  edges: Array<UserEdge>;
  /** Whether more pages follow, and the cursors to get them */
  pageInfo: PageInfo;
};

/** A user and its position in a connection */
export type UserEdge = {
  __typename?: 'UserEdge';
  /** Pass as `after` to continue after this user */
  cursor: Scalars['String']['output'];
  /** The user */
  node: User;
};
