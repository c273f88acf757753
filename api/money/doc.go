// Package money is the gateway's exact decimal arithmetic for prices, costs
// and budgets. Amounts are integers of pico-units (1e-12 of a currency unit)
// and prices are integers of micro-units per million tokens, which is the
// same number as pico-units per token: a cost is a sum of token × price
// products with no division and no rounding, so two independent counts of
// the same tokens agree to the last digit. Floats appear nowhere; every
// operation checks overflow and returns an error rather than wrap, because a
// wrapped cost is a wrong bill.
package money
