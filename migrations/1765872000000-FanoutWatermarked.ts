/**
 * tb_fanout_task.watermarked: false when the publish could not add its deliver task to the fan-out
 * watermark in Redis (Redis was down or hung), written in the publishing transaction itself. The
 * relay adds exactly those tasks to the watermark (and sets it), so its pass reads a handful of
 * rows instead of every task in flight (src/feed/watermark.ts). The index serves that read.
 */
import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

export class FanoutWatermarked1765872000000 implements MigrationInterface {
  name = 'FanoutWatermarked1765872000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn(
      'tb_fanout_task',
      new TableColumn({ name: 'watermarked', type: 'boolean', default: true }),
    );
    await queryRunner.createIndex(
      'tb_fanout_task',
      new TableIndex({ name: 'ix_fanout_task_watermarked', columnNames: ['watermarked', 'status'] }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('tb_fanout_task', 'ix_fanout_task_watermarked');
    await queryRunner.dropColumn('tb_fanout_task', 'watermarked');
  }
}
