-- Version 4: the app's answer the model is still to read (Hold.Reply),
-- sealed by the gate under a per-hold key derived from the gate's secret
-- (never stored) and a salt stored in the value itself. It is set when the
-- hold settles and set to NULL once the model has read it. Holds settled
-- before this version read back without one; their outcome column holds
-- the sentence the gate wrote then, which the gate reads as before.
ALTER TABLE holds ADD COLUMN reply bytea;
