-- 0015: review's reject (docs/work-product.md#review): how many times a person rejected the
-- item, and the feedback of the latest rejection, which the next run is given as its prompt.

ALTER TABLE items ADD COLUMN rejections INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN feedback TEXT;
