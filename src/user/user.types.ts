/** The User object type. Counts come from counters kept exact in the follow transaction. */
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { toGlobalId } from '../kernel/global-id';
import { PageInfo } from '../kernel/pagination/connection';
import { Node } from '../kernel/node';

@ObjectType({ implements: Node, description: 'A person who publishes blogs and follows others' })
export class User implements Node {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  nickName!: string;

  @Field(() => String, { nullable: true })
  icon!: string | null;

  @Field(() => Int, { description: 'How many users follow this user' })
  followerCount!: number;

  @Field(() => Int, { description: 'How many users this user follows' })
  followingCount!: number;

  /** The database id (not exposed; `id` is the global id). */
  dbId!: number;

  static fromRow(row: UserRow): User {
    const user = new User();
    user.dbId = Number(row.id);
    user.id = toGlobalId('User', user.dbId);
    user.nickName = row.nick_name;
    user.icon = row.icon;
    user.followerCount = Number(row.follower_count);
    user.followingCount = Number(row.following_count);
    return user;
  }
}

/** A tb_user row as raw SQL returns it (BIGINT as string). */
export interface UserRow {
  id: string | number;
  nick_name: string;
  icon: string | null;
  follower_count: number;
  following_count: number;
}

@ObjectType()
export class UserEdge {
  @Field(() => String, { description: 'Pass as `after` to continue after this user' })
  cursor!: string;

  @Field(() => User)
  node!: User;
}

@ObjectType({ description: 'A page of users' })
export class UserConnection {
  @Field(() => [UserEdge])
  edges!: UserEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
