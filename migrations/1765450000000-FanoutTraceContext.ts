/**
 * tb_fanout_task.trace_context: the W3C traceparent of the request that recorded the event (a
 * publish or a delete), written in the same transaction, so that the fan-out's jobs continue
 * that trace whoever queues them later (the API right after the commit, or the outbox relay
 * after a Redis outage). NULL when tracing is off. 55 characters today (version 00); 64 leaves
 * room for a future version's longer form.
 */
import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

export class FanoutTraceContext1765450000000 implements MigrationInterface {
  name = 'FanoutTraceContext1765450000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.addColumn(
      'tb_fanout_task',
      new TableColumn({ name: 'trace_context', type: 'varchar', length: '64', isNullable: true }),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropColumn('tb_fanout_task', 'trace_context');
  }
}
