/**
 * Tables that the same migration creates on MySQL and on the embedded SQLite store.
 *
 * On MySQL a table is exactly as written. On SQLite two MySQL-isms are translated:
 * - character sets and collations do not exist: text compares byte for byte, which nick_key
 *   wants anyway (the other text columns are never compared);
 * - an auto-increment key must be INTEGER PRIMARY KEY (SQLite's 64-bit rowid), not BIGINT.
 */
import { QueryRunner, Table, TableOptions } from 'typeorm';

export function tableFor(queryRunner: QueryRunner, options: TableOptions): Table {
  if (queryRunner.connection.driver.options.type === 'mysql') return new Table(options);
  return new Table({
    ...options,
    columns: options.columns?.map(({ charset: _charset, collation: _collation, ...column }) =>
      column.isGenerated && column.generationStrategy === 'increment' ? { ...column, type: 'integer' } : column,
    ),
  });
}
