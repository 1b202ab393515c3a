/**
 * The initial schema: users, blogs, follows and likes (see src/db/entities.ts for what each
 * column means). Written with TypeORM's Table API rather than raw DDL so the same migration can
 * run on other drivers TypeORM supports.
 */
import { MigrationInterface, QueryRunner, TableColumnOptions } from 'typeorm';
import { tableFor } from './portable';

const id = (name = 'id'): TableColumnOptions => ({
  name,
  type: 'bigint',
  isPrimary: true,
  isGenerated: true,
  generationStrategy: 'increment',
});
const bigint = (name: string): TableColumnOptions => ({ name, type: 'bigint' });
const timestamp = (name: string, isNullable = false): TableColumnOptions => ({
  name,
  type: 'datetime',
  precision: 3,
  isNullable,
});
// utf8mb4 so titles, nicknames and content keep every character (emoji included) verbatim.
const text = (
  name: string,
  type: 'varchar' | 'text',
  length?: number,
  isNullable = false,
  collation = 'utf8mb4_unicode_ci',
): TableColumnOptions => ({
  name,
  type,
  length: length === undefined ? undefined : String(length),
  isNullable,
  charset: 'utf8mb4',
  collation,
});

export class CreateFeedTables1764489600000 implements MigrationInterface {
  name = 'CreateFeedTables1764489600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_user',
        columns: [
          id(),
          text('nick_name', 'varchar', 32),
          // The unique login key (see nickNameKey): compared byte for byte, because the
          // _unicode_ci collations treat e.g. all emoji, or "Rene" and "René", as equal.
          text('nick_key', 'varchar', 128, false, 'utf8mb4_bin'),
          text('password', 'varchar', 255),
          text('icon', 'varchar', 512, true),
          { name: 'follower_count', type: 'int', default: 0 },
          { name: 'following_count', type: 'int', default: 0 },
          timestamp('created_at'),
          timestamp('last_active_at', true),
        ],
        indices: [{ name: 'uq_user_nick_key', columnNames: ['nick_key'], isUnique: true }],
      }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_blog',
        columns: [
          id(),
          bigint('user_id'),
          text('title', 'varchar', 255),
          text('content', 'text'),
          text('images', 'text'),
          { name: 'liked', type: 'int', default: 0 },
          timestamp('created_at'),
          timestamp('deleted_at', true),
        ],
        indices: [{ name: 'ix_blog_user_created', columnNames: ['user_id', 'created_at', 'id'] }],
      }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_follow',
        columns: [id(), bigint('user_id'), bigint('follow_user_id'), timestamp('created_at')],
        indices: [
          { name: 'uq_follow_pair', columnNames: ['user_id', 'follow_user_id'], isUnique: true },
          { name: 'ix_follow_followee', columnNames: ['follow_user_id', 'user_id'] },
        ],
      }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_blog_like',
        columns: [
          { ...bigint('blog_id'), isPrimary: true },
          { ...bigint('user_id'), isPrimary: true },
          timestamp('created_at'),
        ],
        indices: [{ name: 'ix_like_user_blog', columnNames: ['user_id', 'blog_id'] }],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['tb_blog_like', 'tb_follow', 'tb_blog', 'tb_user']) {
      await queryRunner.dropTable(table);
    }
  }
}
