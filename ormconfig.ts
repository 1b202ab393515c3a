/**
 * The DataSource for the TypeORM CLI, e.g.
 *   npx typeorm -d dist/ormconfig.js migration:show
 * It reads DATABASE_URL through the same configuration as the server.
 */
import 'reflect-metadata';
import { loadConfig } from './src/kernel/config';
import { createDataSource, SqlStatementLog } from './src/db/data-source';

export default createDataSource(loadConfig().databaseUrl, new SqlStatementLog(console, true));
