-- The counted hours are folded into `delivery_hours` with the rest; migration 25's down drops
-- them all.
SELECT 1;
