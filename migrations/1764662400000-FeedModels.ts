/**
 * For the hybrid feed model and inactive users:
 * - tb_blog.pushed: whether the blog was fanned out into inboxes (false for a blog published by
 *   a big author in the hybrid model: readers merge it in at read time);
 * - tb_user.has_pulled_blogs: the author has at least one such blog, so readers must look;
 * - an index on tb_user.last_active_at (fan-out skips inactive followers).
 */
import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

export class FeedModels1764662400000 implements MigrationInterface {
  name = 'FeedModels1764662400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('tb_blog', new TableColumn({ name: 'pushed', type: 'boolean', default: true }));
    await queryRunner.addColumn('tb_user', new TableColumn({ name: 'has_pulled_blogs', type: 'boolean', default: false }));
    await queryRunner.createIndex('tb_user', new TableIndex({ name: 'ix_user_last_active', columnNames: ['last_active_at'] }));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('tb_user', 'ix_user_last_active');
    await queryRunner.dropColumn('tb_user', 'has_pulled_blogs');
    await queryRunner.dropColumn('tb_blog', 'pushed');
  }
}
