/** The User object type. Counts come from counters kept exact in the follow transaction. */
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { toGlobalId } from '../kernel/global-id';
import { PageInfo } from '../kernel/pagination/connection';
import { Node } from '../kernel/node';
import { UrlScalar } from '../kernel/scalars';

@ObjectType({ simpleResolvers: true, implements: Node, description: 'A person who publishes blogs and follows others' })
export class User implements Node {
  @Field(() => ID, { description: 'Opaque global id' })
  id!: string;

  @Field(() => String, {
    description: 'The name the user chose, unique without regard to case or width; 1..32 characters',
  })
  nickName!: string;

  @Field(() => String, {
    nullable: true,
    description: 'Picture of the user, an http or https URL; null when none was set',
  })
  icon!: string | null;

  @Field(() => Int, { description: 'How many users follow this user' })
  followerCount!: number;

  @Field(() => Int, { description: 'How many users this user follows' })
  followingCount!: number;

  /** The database id (not exposed; `id` is the global id). */
  dbId!: number;

  /**
   * Whether followerCount and followingCount were read with the user. A user from the hydration
   * cache has only its nickName and icon: its counts (which every follow changes) are read when
   * asked for (UserResolver).
   */
  counted!: boolean;

  static fromRow(row: UserRow): User {
    const user = new User();
    user.counted = true;
    user.dbId = Number(row.id);
    user.id = toGlobalId('User', user.dbId);
    user.nickName = row.nick_name;
    user.icon = row.icon;
    user.followerCount = Number(row.follower_count);
    user.followingCount = Number(row.following_count);
    return user;
  }

  /** A user as the hydration cache keeps it: nickName and icon, counts not read. */
  static partial(id: number, nickName: string, icon: string | null): User {
    const user = User.fromRow({ id, nick_name: nickName, icon, follower_count: 0, following_count: 0 });
    user.counted = false;
    return user;
  }
}

@InputType({ description: "A change to one's own profile; omitted fields stay as they are" })
export class UpdateProfileInput {
  @Field(() => String, {
    nullable: true,
    description:
      'The new nickName: 1..32 characters, unique without regard to case or width, no control characters, no white space at either end',
  })
  nickName?: string | null;

  @Field(() => UrlScalar, {
    nullable: true,
    description: 'The new picture: an http or https URL of 1..512 characters; null removes it',
  })
  icon?: string | null;
}

/** A tb_user row as raw SQL returns it (BIGINT as string). */
export interface UserRow {
  id: string | number;
  nick_name: string;
  icon: string | null;
  follower_count: number;
  following_count: number;
}

@ObjectType({ simpleResolvers: true, description: 'A user and its position in a connection' })
export class UserEdge {
  @Field(() => String, { description: 'Pass as `after` to continue after this user' })
  cursor!: string;

  @Field(() => User, { description: 'The user' })
  node!: User;
}

@ObjectType({ simpleResolvers: true, description: 'A page of users' })
export class UserConnection {
  @Field(() => [UserEdge], { description: 'The users of this page, in the order of the connection' })
  edges!: UserEdge[];

  @Field(() => PageInfo, { description: 'Whether more pages follow, and the cursors to get them' })
  pageInfo!: PageInfo;
}
