var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
var _a, _b;
import { Controller, Get, Injectable, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CallNotPermittedError, CircuitBreaker, deadlineHeaders, currentSignal, Fallback, ResilienceExceptionFilter, ResilienceModule, Retry, Timeout, } from 'resilience4nest';
let PricingClient = class PricingClient {
    baseUrl = process.env.PRICING_URL ?? 'http://127.0.0.1:4000';
    async quote(sku) {
        const response = await fetch(`${this.baseUrl}/prices/${sku}`, {
            signal: currentSignal(), // aborted when this attempt times out
            headers: deadlineHeaders(), // tells the pricing service how long we will wait
        });
        if (!response.ok)
            throw Object.assign(new Error(`pricing answered ${response.status}`), { status: response.status });
        return (await response.json());
    }
    priceUnknown(sku) {
        return { sku, price: 'unknown' };
    }
};
__decorate([
    Fallback(CallNotPermittedError, 'priceUnknown'),
    Retry('pricing'),
    CircuitBreaker('pricing'),
    Timeout('pricing'),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [String]),
    __metadata("design:returntype", typeof (_a = typeof Promise !== "undefined" && Promise) === "function" ? _a : Object)
], PricingClient.prototype, "quote", null);
PricingClient = __decorate([
    Injectable()
], PricingClient);
export { PricingClient };
let QuotesController = class QuotesController {
    pricing;
    constructor(pricing) {
        this.pricing = pricing;
    }
    quote(sku) {
        return this.pricing.quote(sku);
    }
};
__decorate([
    Get(':sku'),
    __param(0, Param('sku')),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [String]),
    __metadata("design:returntype", typeof (_b = typeof Promise !== "undefined" && Promise) === "function" ? _b : Object)
], QuotesController.prototype, "quote", null);
QuotesController = __decorate([
    Controller('quotes'),
    __metadata("design:paramtypes", [PricingClient])
], QuotesController);
export { QuotesController };
let AppModule = class AppModule {
};
AppModule = __decorate([
    Module({
        imports: [
            ResilienceModule.forRoot({
                retry: {
                    configs: { default: { maxAttempts: 3, waitDuration: '200ms', enableExponentialBackoff: true } },
                    instances: { pricing: { budget: { ratio: 0.1, maxTokens: 10 } } },
                },
                circuitBreaker: {
                    instances: { pricing: { slidingWindowSize: 20, minimumNumberOfCalls: 10, waitDurationInOpenState: '10s' } },
                },
                timeLimiter: { instances: { pricing: { timeoutDuration: '800ms' } } },
                deadline: { defaultBudget: '2s' },
            }),
        ],
        controllers: [QuotesController],
        providers: [PricingClient],
    })
], AppModule);
export { AppModule };
/** Starts the application on `port` of `host` (every IPv4 interface by default); answers it, for `app.close()`. */
export async function bootstrap(port = 3000, host = '0.0.0.0') {
    const app = await NestFactory.create(AppModule);
    app.useGlobalFilters(new ResilienceExceptionFilter()); // 503 + Retry-After, 504, problem+json
    await app.listen(port, host);
    return app;
}
