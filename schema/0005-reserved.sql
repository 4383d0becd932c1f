-- 0005-reserved.sql - a placeholder for another branch's 0005 migration
--
-- Nothing: the branch that adds schema/0006-hold.sql was started before
-- the real 0005 existed, and migrations are numbered without gaps
-- (embed.py). Delete this file when merging with the real 0005.
SELECT 1;
