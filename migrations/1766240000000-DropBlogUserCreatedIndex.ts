/**
 * Drops ix_blog_user_created (user_id, created_at, id) on tb_blog. Every read of an author's blogs
 * asks for live ones (`deleted_at IS NULL`) and uses ix_blog_user_live (user_id, deleted_at,
 * created_at, id), which also serves the foreign key on user_id; the older index was only written
 * on every publish and delete, never read.
 */
import { MigrationInterface, QueryRunner } from 'typeorm';

export class DropBlogUserCreatedIndex1766240000000 implements MigrationInterface {
  name = 'DropBlogUserCreatedIndex1766240000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.query(mysql ? 'DROP INDEX ix_blog_user_created ON tb_blog' : 'DROP INDEX ix_blog_user_created');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE INDEX ix_blog_user_created ON tb_blog (user_id, created_at, id)');
  }
}
