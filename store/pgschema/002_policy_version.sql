-- Version 2: the versions of the policy and of its action a hold was made
-- under (policies.Policy.Version and Action.Version, hex), so the gate can
-- re-check a hold whose policy changed before it runs. Holds made before
-- this version read back with both empty: made under no known version.
ALTER TABLE holds
	ADD COLUMN policy_version text NOT NULL DEFAULT '',
	ADD COLUMN action_version text NOT NULL DEFAULT '';
