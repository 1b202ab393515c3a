/**
 * The indexes of the social graph's pages (User.followers, User.following, User.commonFollows,
 * Blog.likers; src/db/keyset.ts): each page is an index range scan of one list in its order,
 * (time of the follow or like, the other user's id), that stops after the page. The indexes
 * already there order by user id only: uq_follow_pair (user_id, follow_user_id),
 * ix_follow_followee (follow_user_id, user_id) and the like's primary key (blog_id, user_id),
 * so a page would sort a user's whole list of followers.
 */
import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

const INDEXES: Array<{ table: string; index: TableIndex }> = [
  // A user's followers, most recent follow first.
  {
    table: 'tb_follow',
    index: new TableIndex({
      name: 'ix_follow_followee_created',
      columnNames: ['follow_user_id', 'created_at', 'user_id'],
    }),
  },
  // The users a user follows, most recent follow first (and the common follows, in that order).
  {
    table: 'tb_follow',
    index: new TableIndex({
      name: 'ix_follow_follower_created',
      columnNames: ['user_id', 'created_at', 'follow_user_id'],
    }),
  },
  // A blog's likers, earliest like first.
  {
    table: 'tb_blog_like',
    index: new TableIndex({ name: 'ix_like_blog_created', columnNames: ['blog_id', 'created_at', 'user_id'] }),
  },
];

export class SocialGraphIndexes1765008000000 implements MigrationInterface {
  name = 'SocialGraphIndexes1765008000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const { table, index } of INDEXES) await queryRunner.createIndex(table, index);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const { table, index } of [...INDEXES].reverse()) await queryRunner.dropIndex(table, index);
  }
}
