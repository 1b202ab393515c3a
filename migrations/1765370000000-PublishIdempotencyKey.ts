/**
 * tb_blog.idempotency_key: the key a client may send with publishBlog, so that a retry (after a
 * lost answer or a timeout) returns the blog the first attempt made instead of making another.
 * uq_blog_user_idempotency makes it unique per author; the database, not a check-then-insert,
 * decides between concurrent retries. Blogs published without a key hold NULL, which a unique
 * index never compares (MySQL and SQLite alike).
 */
import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

export class PublishIdempotencyKey1765370000000 implements MigrationInterface {
  name = 'PublishIdempotencyKey1765370000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    await queryRunner.addColumn(
      'tb_blog',
      new TableColumn({
        name: 'idempotency_key',
        type: 'varchar',
        length: '64',
        isNullable: true,
        // Keys are ASCII (src/blog/blog.service.ts): compared byte for byte, "Key" is not "key".
        ...(mysql ? { charset: 'ascii', collation: 'ascii_bin' } : {}),
      }),
    );
    await queryRunner.createIndex(
      'tb_blog',
      new TableIndex({ name: 'uq_blog_user_idempotency', columnNames: ['user_id', 'idempotency_key'], isUnique: true }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('tb_blog', 'uq_blog_user_idempotency');
    await queryRunner.dropColumn('tb_blog', 'idempotency_key');
  }
}
