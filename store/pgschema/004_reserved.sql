-- Version 4 is reserved for the outcomes migration being written beside
-- this one (issue 15 §3). This file only keeps the versions contiguous
-- in this branch: the integrator deletes it when that file is merged.
SELECT 1;
