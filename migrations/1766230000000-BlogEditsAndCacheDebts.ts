/**
 * Editing and the hydration cache (src/blog/blog.cache.ts):
 * - tb_blog.edited_at: when the author last edited the blog (updateBlog); NULL if never.
 * - tb_cache_debt: a blog or user whose cached copy in Redis a write could not invalidate
 *   (Redis unreachable at that moment), written in the write's own transaction. Every process
 *   clears these entries in Redis before it trusts the cache again (after an outage, and
 *   periodically), then deletes the rows. kind 'b' is a blog (its row and like set), 'u' a user.
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { tableFor } from './portable';

export class BlogEditsAndCacheDebts1766230000000 implements MigrationInterface {
  name = 'BlogEditsAndCacheDebts1766230000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn(
      'tb_blog',
      new TableColumn({ name: 'edited_at', type: 'datetime', precision: 3, isNullable: true }),
    );
    await queryRunner.createTable(
      tableFor(queryRunner, {
        name: 'tb_cache_debt',
        columns: [
          { name: 'id', type: 'bigint', isPrimary: true, isGenerated: true, generationStrategy: 'increment' },
          { name: 'kind', type: 'char', length: '1' },
          { name: 'ref_id', type: 'bigint' },
        ],
      }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable('tb_cache_debt');
    await queryRunner.dropColumn('tb_blog', 'edited_at');
  }
}
