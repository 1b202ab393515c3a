/**
 * ix_blog_user_live on tb_blog (user_id, deleted_at, created_at, id): an author's live blogs,
 * newest first, as one contiguous index range. A pull page reads, per followee, the range after
 * its position and stops after the rows the page can use (src/feed/feed.store.ts feedPage).
 * With deleted_at in the key, `deleted_at IS NULL` is part of the range: deleted blogs are
 * neither stepped over nor looked up, and the index covers the page (MariaDB's EXPLAIN of a
 * branch: ref, or range after a cursor, "Using where; Using index", no filesort).
 * ix_blog_user_created (user_id, created_at, id) was kept here; a later migration drops it
 * (1766240000000-DropBlogUserCreatedIndex), unused since.
 */
import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

export class BlogLiveIndex1765094400000 implements MigrationInterface {
  name = 'BlogLiveIndex1765094400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.createIndex(
      'tb_blog',
      new TableIndex({ name: 'ix_blog_user_live', columnNames: ['user_id', 'deleted_at', 'created_at', 'id'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('tb_blog', 'ix_blog_user_live');
  }
}
