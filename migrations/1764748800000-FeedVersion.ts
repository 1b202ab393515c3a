/**
 * tb_user.feed_version: counts the user's follow changes. Each follow or unfollow increments it
 * under the user's row lock, so the changes of one reader are numbered in commit order, and the
 * inbox applies them in that order whatever order they reach Redis in (src/feed/inbox.ts).
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

export class FeedVersion1764748800000 implements MigrationInterface {
  name = 'FeedVersion1764748800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('tb_user', new TableColumn({ name: 'feed_version', type: 'bigint', default: 0 }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tb_user', 'feed_version');
  }
}
