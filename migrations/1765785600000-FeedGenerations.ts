/**
 * What keeps the feed exact through what operators do (src/feed/inbox.ts):
 * - tb_feed_generation: one row, the Redis generation. Raised whenever a process finds that
 *   Redis is not the server it was (a restart from an older dump, a failover, a restore): inboxes,
 *   floors and the watermark of an older generation are not trusted. Starting at 1 here also makes
 *   every inbox written before this migration (which carries no generation) be rebuilt once.
 * - tb_feed_change: the outbox of follow changes. A follow or unfollow writes its row in its own
 *   transaction; the row is deleted once the change is applied to the reader's inbox, by the
 *   process that made it or, if that process died or Redis was away, by the relay.
 * - Authors with blogs that were not fanned out (the pull model's, a big author's) are marked
 *   has_pulled_blogs, whichever model published them: pages of every model merge those blogs in
 *   from MySQL, so the model can change between deploys.
 */
import { MigrationInterface, QueryRunner } from 'typeorm';
import { tableFor } from './portable';

export class FeedGenerations1765785600000 implements MigrationInterface {
  name = 'FeedGenerations1765785600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_feed_generation',
        columns: [
          { name: 'id', type: 'int', isPrimary: true },
          { name: 'epoch', type: 'bigint' },
          // The run ids and replication ids of the Redis servers the generation was started on.
          { name: 'redis_identity', type: 'varchar', length: '2048', charset: 'ascii', collation: 'ascii_bin' },
        ],
      }),
    );
    await queryRunner.query("INSERT INTO tb_feed_generation (id, epoch, redis_identity) VALUES (1, 1, '')");
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_feed_change',
        columns: [
          { name: 'id', type: 'bigint', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'reader_id', type: 'bigint' },
          { name: 'author_id', type: 'bigint' },
          { name: 'follow', type: 'boolean' },
          { name: 'version', type: 'bigint' },
          { name: 'created_at', type: 'datetime', precision: 3 },
        ],
      }),
    );
    await queryRunner.query(
      'UPDATE tb_user SET has_pulled_blogs = TRUE WHERE NOT has_pulled_blogs AND id IN (SELECT user_id FROM tb_blog WHERE NOT pushed AND deleted_at IS NULL)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tb_feed_change');
    await queryRunner.dropTable('tb_feed_generation');
  }
}
