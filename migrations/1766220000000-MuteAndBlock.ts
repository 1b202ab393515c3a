/**
 * Mute and block (src/follow/follow.service.ts):
 * - tb_user_mute: whom a user has muted, with when (User.muted lists them most recent first, on
 *   ix_mute_user_created). A mute of someone not followed is kept too: it takes effect if they
 *   are followed later.
 * - tb_follow.muted: whether this follow is muted, kept with tb_user_mute in the same
 *   transaction. Every read of the feed's followees takes only the follows with muted = 0, on
 *   ix_follow_feed (user_id, muted, follow_user_id); counts and social lists keep every follow.
 * - tb_user_block: who blocked whom, with when (User.blocked, on ix_block_user_created); the
 *   primary key answers "did A block B", ix_block_blocked "did B block A".
 */
import { MigrationInterface, QueryRunner, TableColumnOptions, TableIndex } from 'typeorm';
import { tableFor } from './portable';

const bigint = (name: string): TableColumnOptions => ({ name, type: 'bigint', isPrimary: true });
const createdAt: TableColumnOptions = { name: 'created_at', type: 'datetime', precision: 3 };
const FEED_INDEX = new TableIndex({ name: 'ix_follow_feed', columnNames: ['user_id', 'muted', 'follow_user_id'] });

export class MuteAndBlock1766220000000 implements MigrationInterface {
  name = 'MuteAndBlock1766220000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Raw DDL: TypeORM's addColumn rebuilds the whole table on SQLite; ADD COLUMN is the same on both.
    await queryRunner.query('ALTER TABLE tb_follow ADD COLUMN muted BOOLEAN NOT NULL DEFAULT 0');
    await queryRunner.createIndex('tb_follow', FEED_INDEX);
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_user_mute',
        columns: [bigint('user_id'), bigint('muted_user_id'), createdAt],
        indices: [{ name: 'ix_mute_user_created', columnNames: ['user_id', 'created_at', 'muted_user_id'] }],
      }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_user_block',
        columns: [bigint('user_id'), bigint('blocked_user_id'), createdAt],
        indices: [
          { name: 'ix_block_user_created', columnNames: ['user_id', 'created_at', 'blocked_user_id'] },
          { name: 'ix_block_blocked', columnNames: ['blocked_user_id', 'user_id'] },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tb_user_block');
    await queryRunner.dropTable('tb_user_mute');
    await queryRunner.dropIndex('tb_follow', FEED_INDEX);
    await queryRunner.dropColumn('tb_follow', 'muted');
  }
}
