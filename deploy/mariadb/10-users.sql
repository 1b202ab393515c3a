-- Run once by the MariaDB image when the primary's data directory is created
-- (/docker-entrypoint-initdb.d), in the database `feed`; written to the binary log, so a replica
-- that follows the primary from the start gets the same users. Passwords: change them, and the
-- URLs in docker-compose.yml with them.
--
-- feed_migrate (every right on `feed`) is made by the image itself (MARIADB_USER): it runs
-- `npm run migrate`. The API and the fan-out workers need only this:
CREATE USER 'feed_app'@'%' IDENTIFIED BY 'feed-app-password';
GRANT SELECT, INSERT, UPDATE, DELETE ON `feed`.* TO 'feed_app'@'%';
-- SHOW REPLICA STATUS, for the API's replica health check (DATABASE_REPLICA_URLS).
GRANT REPLICA MONITOR ON *.* TO 'feed_app'@'%';
