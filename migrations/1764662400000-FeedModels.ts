/**
 * For the hybrid feed model:
 * - tb_blog.pushed: whether the blog was fanned out into inboxes (false for a blog published by
 *   a big author in the hybrid model: readers merge it in at read time);
 * - tb_user.has_pulled_blogs: the author has at least one such blog, so readers must look.
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

export class FeedModels1764662400000 implements MigrationInterface {
  name = 'FeedModels1764662400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn('tb_blog', new TableColumn({ name: 'pushed', type: 'boolean', default: true }));
    await queryRunner.addColumn(
      'tb_user',
      new TableColumn({ name: 'has_pulled_blogs', type: 'boolean', default: false }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tb_user', 'has_pulled_blogs');
    await queryRunner.dropColumn('tb_blog', 'pushed');
  }
}
